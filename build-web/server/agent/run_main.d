build-web/server/agent/run_main.o: server/agent/run_main.c server/entry.h
server/entry.h:
