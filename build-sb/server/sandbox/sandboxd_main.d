build-sb/server/sandbox/sandboxd_main.o: server/sandbox/sandboxd_main.c \
 server/entry.h
server/entry.h:
