build-sb/server/common/log.o: server/common/log.c server/common/log.h
server/common/log.h:
