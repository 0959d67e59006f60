#!/bin/sh
# The image's entrypoint: apply migrations, seed the demo when SEED_DEMO=1, then run the
# command (the server, by default). Every step is idempotent, so each start may repeat it:
# the demo is created on the first start and left as it is (or restored) on later ones.
# Replicas starting together take turns: `database upgrade` holds a database lock (a
# PostgreSQL advisory lock) while it migrates, and finds the schema at head once it has it.
set -eu

litestar database upgrade --no-prompt

case "${SEED_DEMO:-0}" in
  1 | true | yes)
    echo "SEED_DEMO: demo user demo@example.com / demo-password (for trying it out only)" >&2
    litestar seed demo
    ;;
esac

exec "$@"
