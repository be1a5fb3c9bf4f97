build-web/server/agent/agent_main.o: server/agent/agent_main.c \
 server/entry.h
server/entry.h:
