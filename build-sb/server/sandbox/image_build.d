build-sb/server/sandbox/image_build.o: server/sandbox/image_build.c \
 server/entry.h
server/entry.h:
