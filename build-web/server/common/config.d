build-web/server/common/config.o: server/common/config.c \
 server/common/config.h server/common/status.h
server/common/config.h:
server/common/status.h:
