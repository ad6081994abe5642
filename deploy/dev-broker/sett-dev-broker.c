/*
 * sett-dev-broker: a Kafka-protocol development broker for machines with no Kafka.
 *
 * Runs librdkafka's in-process mock cluster (rdkafka_mock.h) on 127.0.0.1, pre-creates Sett's
 * topics (kafkajs' createTopics fails against the mock, see docs/architecture.md), prints
 * "BOOTSTRAP host:port,..." once on stdout and serves until SIGINT/SIGTERM or stdin EOF, so it
 * dies with whatever spawned it. Memory only: a restart loses every message and offset.
 *
 * stdin commands (one per line, each answered with one line):
 *   down <brokerId>   drop the broker's connections and refuse new ones  -> OK | ERR <reason>
 *   up <brokerId>     accept connections again                           -> OK | ERR <reason>
 *
 * Usage: sett-dev-broker [--brokers N] [--partitions N] [--topic name:partitions]...
 */
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_TOPICS 64

struct topic { const char *name; int partitions; };
static struct topic topics[MAX_TOPICS];
static int topic_cnt;

/* A later --topic with the same name replaces the partition count (mock topics cannot be
 * created twice). */
static void add_topic(const char *name, int partitions) {
  for (int i = 0; i < topic_cnt; i++)
    if (!strcmp(topics[i].name, name)) { topics[i].partitions = partitions; return; }
  if (topic_cnt == MAX_TOPICS) { fprintf(stderr, "too many topics\n"); exit(2); }
  topics[topic_cnt++] = (struct topic){ name, partitions };
}

/* The cluster lives only in memory, so there is nothing to flush: exiting straight from the
 * handler avoids racing a signal against the blocking read on stdin. */
static void on_signal(int sig) { (void)sig; _exit(0); }

static int positive(const char *s, const char *what) {
  int n = atoi(s);
  if (n < 1) { fprintf(stderr, "%s must be a positive integer, got '%s'\n", what, s); exit(2); }
  return n;
}

int main(int argc, char **argv) {
  int brokers = 1, partitions = 16;
  const char *extra[MAX_TOPICS]; int extra_cnt = 0;
  char errstr[512], line[256];

  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--brokers") && i + 1 < argc) brokers = positive(argv[++i], "--brokers");
    else if (!strcmp(argv[i], "--partitions") && i + 1 < argc) partitions = positive(argv[++i], "--partitions");
    else if (!strcmp(argv[i], "--topic") && i + 1 < argc && extra_cnt < MAX_TOPICS) extra[extra_cnt++] = argv[++i];
    else { fprintf(stderr, "usage: %s [--brokers N] [--partitions N] [--topic name:partitions]...\n", argv[0]); return 2; }
  }
  add_topic("events_plugin_ingestion", partitions);
  add_topic("events_plugin_ingestion_overflow", partitions);
  add_topic("events_plugin_ingestion_historical", partitions);
  add_topic("events_dead_letter", 4);
  for (int i = 0; i < extra_cnt; i++) {
    char *colon = strrchr(extra[i], ':');
    if (!colon || colon == extra[i]) { fprintf(stderr, "--topic wants name:partitions, got '%s'\n", extra[i]); return 2; }
    *colon = '\0';
    add_topic(extra[i], positive(colon + 1, "topic partitions"));
  }

  /* The mock cluster needs an rd_kafka_t for its bookkeeping only; this handle never connects
   * anywhere. log_level 3 hides its "no bootstrap.servers" warning. */
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof(errstr)) != RD_KAFKA_CONF_OK) {
    fprintf(stderr, "conf: %s\n", errstr); return 1;
  }
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!rk) { fprintf(stderr, "rd_kafka_new: %s\n", errstr); return 1; }

  /* Brokers are numbered 1..N and bind to 127.0.0.1 on random ports. */
  rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
  if (!mc) { fprintf(stderr, "rd_kafka_mock_cluster_new failed\n"); return 1; }

  /* Retention: each mock partition keeps at most 5 MB / 100000 record batches and drops the
   * oldest beyond that (hard-coded in rd_kafka_mock_partition_init); librdkafka 2.0.2 exposes
   * no setting to raise it, so consumers must keep up with producers. */
  for (int i = 0; i < topic_cnt; i++) {
    rd_kafka_resp_err_t err = rd_kafka_mock_topic_create(mc, topics[i].name, topics[i].partitions, brokers);
    if (err) { fprintf(stderr, "topic %s: %s\n", topics[i].name, rd_kafka_err2str(err)); return 1; }
  }

  struct sigaction sa = { 0 };
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);

  printf("BOOTSTRAP %s\n", rd_kafka_mock_cluster_bootstraps(mc));
  fflush(stdout);

  /* stdin EOF means our parent is gone: that is how the broker dies with it. */
  while (fgets(line, sizeof(line), stdin)) {
    char cmd[16]; int id; rd_kafka_resp_err_t err;
    if (sscanf(line, "%15s %d", cmd, &id) != 2) { if (line[0] != '\n') puts("ERR usage: down|up <brokerId>"); }
    else if (!strcmp(cmd, "down") || !strcmp(cmd, "up")) {
      err = !strcmp(cmd, "down") ? rd_kafka_mock_broker_set_down(mc, id) : rd_kafka_mock_broker_set_up(mc, id);
      if (err) printf("ERR %s\n", rd_kafka_err2str(err)); else puts("OK");
    } else puts("ERR usage: down|up <brokerId>");
    fflush(stdout);
  }

  rd_kafka_mock_cluster_destroy(mc);
  rd_kafka_destroy(rk);
  return 0;
}
