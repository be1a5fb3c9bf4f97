build-sb/server/common/util.o: server/common/util.c server/common/util.h \
 server/common/status.h
server/common/util.h:
server/common/status.h:
