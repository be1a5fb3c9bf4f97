build-sb/server/common/status.o: server/common/status.c \
 server/common/status.h
server/common/status.h:
