build-web/server/common/buf.o: server/common/buf.c server/common/buf.h \
 server/common/status.h
server/common/buf.h:
server/common/status.h:
