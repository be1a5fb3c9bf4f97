build-web/server/common/mime.o: server/common/mime.c server/common/mime.h \
 server/common/status.h
server/common/mime.h:
server/common/status.h:
