build-web/server/store/store.o: server/store/store.c server/store/store.h \
 server/common/log.h server/common/path.h server/common/status.h \
 server/common/util.h
server/store/store.h:
server/common/log.h:
server/common/path.h:
server/common/status.h:
server/common/util.h:
