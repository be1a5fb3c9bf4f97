build-web/tests/test_store: tests/unit/test_store.c tests/unit/testlib.h \
 server/common/status.h server/common/util.h server/store/store.h
tests/unit/testlib.h:
server/common/status.h:
server/common/util.h:
server/store/store.h:
