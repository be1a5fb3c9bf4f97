build-sb/server/main.o: server/main.c server/common/config.h \
 server/common/log.h server/common/status.h server/entry.h
server/common/config.h:
server/common/log.h:
server/common/status.h:
server/entry.h:
