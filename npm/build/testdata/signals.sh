#!/bin/sh
# Stands in for the llmproxy binary (LLMPROXY_BIN) in the launcher's signal
# tests: "die SIG" ends by signal SIG; "trap" says ready and exits 42 on
# SIGTERM, 43 on SIGINT, 44 on SIGHUP.
case "$1" in
die)
  kill -"$2" $$
  ;;
trap)
  trap 'echo got TERM; exit 42' TERM
  trap 'echo got INT; exit 43' INT
  trap 'echo got HUP; exit 44' HUP
  echo ready
  while :; do
    sleep 1 &
    wait $!
  done
  ;;
esac
exit 99
