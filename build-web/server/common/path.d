build-web/server/common/path.o: server/common/path.c server/common/path.h \
 server/common/status.h
server/common/path.h:
server/common/status.h:
