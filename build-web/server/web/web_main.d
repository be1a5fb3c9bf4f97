build-web/server/web/web_main.o: server/web/web_main.c server/entry.h
server/entry.h:
