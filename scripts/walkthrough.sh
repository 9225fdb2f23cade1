#!/usr/bin/env bash
# The walk-through of docs/walkthrough.md (and the README's first request), run
# against a live server: every shell block of the page, verbatim and in order,
# each followed by a check of the key figures of its answer.
#
#   bash scripts/walkthrough.sh              # against `npm start` on port 8787
#   PORT=40123 bash scripts/walkthrough.sh   # another port (test/e2e/walkthrough.test.ts)
#
# The server must take the admin token `dev-admin-token` (.dev.vars.example) and
# must not have the streams `orders`, `demo`, `purchases` or `clicks`; the script deletes them at the end.
# test/unit/repo/docs-links.test.ts checks that the page's blocks are all in here.
set -euo pipefail

PORT=${PORT:-8787}
HOST=${HOST:-127.0.0.1}

# The page's commands say localhost:8787; point them at $HOST:$PORT, and bound each call.
curl() {
  local args=() arg
  for arg in "$@"; do args+=("${arg//localhost:8787/$HOST:$PORT}"); done
  command curl --max-time 30 "${args[@]}"
}

step=""
fail() {
  printf 'walkthrough: FAILED at "%s": %s\n--- answer ---\n%s\n' "$step" "$1" "$2" >&2
  exit 1
}
# expect ANSWER PATTERN...: each pattern must occur in the answer (headers compared case-insensitively).
expect() {
  local answer=$1 lower pattern
  shift
  lower=$(printf '%s' "$answer" | tr '[:upper:]' '[:lower:]')
  for pattern in "$@"; do
    [[ $answer == *"$pattern"* || $lower == *"$pattern"* ]] || fail "expected $pattern" "$answer"
  done
}
# refute ANSWER PATTERN...: none of the patterns may occur in the answer.
refute() {
  local answer=$1 pattern
  shift
  for pattern in "$@"; do
    [[ $answer != *"$pattern"* ]] || fail "did not expect $pattern" "$answer"
  done
}
ok() { printf 'ok   %s\n' "$step"; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# --- README: a first request -------------------------------------------------
step="README: a first request"
out=$(
A='Authorization: Bearer dev-admin-token'
curl -s -X PUT localhost:8787/v1/streams/demo -H "$A" -d '{"key": ["id"], "eventTime": "ts", "watermarkDelay": "10 minutes"}'
curl -s -X POST localhost:8787/v1/streams/demo/events -H "$A" -H 'Idempotency-Key: demo-1' \
  -d '[{"id": "a", "ts": "2026-11-29T10:00:00Z"}, {"id": "a", "ts": "2026-11-29T10:00:00Z"}, {"id": "b", "ts": "2026-11-29T10:01:00Z"}]'
)
expect "$out" '"stream":"demo"' '"batchId":"demo-1"' '"input":3' '"emitted":2' '"duplicates":1' '"late":0' '"rejected":[]'
A='Authorization: Bearer dev-admin-token'
out=$(curl -s -X POST localhost:8787/v1/streams/demo/events -H "$A" -H 'Idempotency-Key: demo-1' \
  -d '[{"id": "a", "ts": "2026-11-29T10:00:00Z"}, {"id": "a", "ts": "2026-11-29T10:00:00Z"}, {"id": "b", "ts": "2026-11-29T10:01:00Z"}]')
expect "$out" '"replayed":true' '"emitted":2'
out=$(curl -s localhost:8787/v1/streams/demo/output -H "$A")
expect "$out" '{"id":"a","ts":"2026-11-29T10:00:00Z"}' '{"id":"b","ts":"2026-11-29T10:01:00Z"}'
[[ $(printf '%s\n' "$out" | grep -c '"id"') == 2 ]] || fail "expected two output rows" "$out"
ok

# --- README: what counts as the same event --------------------------------------
step="README: a conflict"
out=$(
A='Authorization: Bearer dev-admin-token'
curl -s -X PUT localhost:8787/v1/streams/purchases -H "$A" -d '{"key": ["order_id"], "eventTime": "ts", "watermarkDelay": "10 minutes", "volatile": ["received_at"]}'
curl -s -X POST localhost:8787/v1/streams/purchases/events -H "$A" -H 'Idempotency-Key: orders-1' \
  -d '[{"order_id": "o1", "ts": "2026-11-29T10:00:00Z", "amount": 10, "received_at": 1},
       {"order_id": "o1", "ts": "2026-11-29T10:00:00Z", "amount": 10, "received_at": 2},
       {"order_id": "o1", "ts": "2026-11-29T10:00:00Z", "amount": 12, "received_at": 3}]'
curl -s localhost:8787/v1/streams/purchases/conflicts -H "$A"
)
expect "$out" '"stream":"purchases"' '"batchId":"orders-1"' '"input":3' '"emitted":1' '"duplicates":2' '"conflicts":1' '"rejected":[]' \
  '"index":2,"verdict":"dropped","kept":{"batchId":"orders-1","source":"default","seq":1}' '"amount":12'
ok
step="README: a receipt"
out=$(curl -s -G localhost:8787/v1/streams/purchases/state -H "$A" --data-urlencode 'row={"order_id": "o1", "ts": "2026-11-29T10:00:00Z"}')
expect "$out" '"key":"[\"o1\"]"' '"kept":{"batchId":"orders-1","source":"default","seq":1,"eventTime":1795946400000},"dropped":2,"conflicts":1'
ok
step="README: a content key"
out=$(
curl -s -X PUT localhost:8787/v1/streams/clicks -H "$A" -d '{"key": {"content": {"exclude": ["received_at"]}}, "eventTime": "ts", "watermarkDelay": "10 minutes"}'
curl -s -X POST localhost:8787/v1/streams/clicks/events -H "$A" -H 'Idempotency-Key: clicks-1' \
  -d '[{"user": "u1", "page": "/a", "ts": "2026-11-29T10:00:00Z", "received_at": 1}, {"page": "/a", "user": "u1", "ts": "2026-11-29T10:00:00Z", "received_at": 2}]'
)
expect "$out" '"stream":"clicks"' '"batchId":"clicks-1"' '"input":2' '"emitted":1' '"duplicates":1' '"conflicts":0'
ok

# --- docs/walkthrough.md -------------------------------------------------------
step='create a stream'
out=$(
curl -si -X PUT localhost:8787/v1/streams/orders \
  -H 'Authorization: Bearer dev-admin-token' -H 'Content-Type: application/json' \
  -d '{"key": ["event_id"], "eventTime": "event_ts", "watermarkDelay": "10 minutes",
       "schema": {"event_id": "string", "amount": "double", "event_ts": "timestamp"}}'
)
expect "$out" '201 Created' '"status":"created"' '"watermarkDelay":600000' '"partitions":8'
ok

step='ingest a JSON array'
out=$(
cat > batch-0001.json <<'EOF'
[
  {"event_id": "evt_1", "amount": 10.5, "event_ts": "2026-11-29T10:00:00Z"},
  {"event_id": "evt_2", "amount": "20", "event_ts": "2026-11-29T10:01:00Z"},
  {"event_id": "evt_1", "amount": 10.5, "event_ts": "2026-11-29T10:00:00Z"},
  {"event_id": "evt_3", "amount": 5,    "event_ts": "yesterday"},
  {"event_id": "evt_4", "amount": 7,    "event_ts": "2026-11-29T10:05:00Z"}
]
EOF
curl -s -X POST localhost:8787/v1/streams/orders/events \
  -H 'Authorization: Bearer dev-admin-token' -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: batch-0001' --data-binary @batch-0001.json
)
expect "$out" '"batchId":"batch-0001"' '"replayed":false' '"watermark":0' '"watermarkAfter":1795946100000' '"input":5' '"emitted":3' '"duplicates":1' '"late":0' '"index":3'
ok

step='retry the same batch'
out=$(
curl -s -X POST localhost:8787/v1/streams/orders/events \
  -H 'Authorization: Bearer dev-admin-token' -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: batch-0001' --data-binary @batch-0001.json
)
expect "$out" '"replayed":true' '"emitted":3' '"duplicates":1'
ok

step='reuse the key with a different body'
out=$(
curl -si -X POST localhost:8787/v1/streams/orders/events \
  -H 'Authorization: Bearer dev-admin-token' -H 'Content-Type: application/json' \
  -H 'Idempotency-Key: batch-0001' -d '[{"event_id": "evt_9", "event_ts": "2026-11-29T10:06:00Z"}]'
)
expect "$out" '422' 'problems/idempotency-key-reused'
ok

step='NDJSON from another source'
out=$(
printf '%s\n' \
  '{"event_id": "evt_2", "amount": 20, "event_ts": "2026-11-29T10:02:00Z"}' \
  '{"event_id": "evt_5", "amount": 3,  "event_ts": "2026-11-29T09:50:00Z"}' \
  '{"event_id": "evt_6", "amount": 8,  "event_ts": 1795947000000}' |
curl -si -X POST localhost:8787/v1/streams/orders/events \
  -H 'Authorization: Bearer dev-admin-token' -H 'Content-Type: application/x-ndjson' \
  -H 'X-Source: shopify' --data-binary @-
)
expect "$out" '200 OK' 'idempotency-key:' '"source":"shopify"' '"watermark":1795946100000' '"input":3' '"emitted":1' '"duplicates":1' '"late":1' '"rejected":[]'
ok

step='look at the stream'
out=$(
curl -s localhost:8787/v1/streams/orders -H 'Authorization: Bearer dev-admin-token'
)
expect "$out" '"watermark":1795946100000' '"shopify":{"maxEventTime":1795947000000' '"rows":4' '"committed":2'
ok

step='read the output'
out=$(
curl -si localhost:8787/v1/streams/orders/output -H 'Authorization: Bearer dev-admin-token'
)
expect "$out" 'x-commit-seq: 2' '{"event_id":"evt_1","amount":10.5,"event_ts":"2026-11-29T10:00:00Z"}' '{"event_id":"evt_2","amount":20,"event_ts":"2026-11-29T10:01:00Z"}' '{"event_id":"evt_4","amount":7,"event_ts":"2026-11-29T10:05:00Z"}' '{"event_id":"evt_6","amount":8,"event_ts":1795947000000}'
ok

step='output after commit 1'
out=$(
curl -s 'localhost:8787/v1/streams/orders/output?after=1' -H 'Authorization: Bearer dev-admin-token'
)
expect "$out" '{"event_id":"evt_6","amount":8,"event_ts":1795947000000}'
refute "$out" 'evt_1'
ok

step='progress reports'
out=$(
curl -s localhost:8787/v1/streams/orders/progress -H 'Authorization: Bearer dev-admin-token'
)
expect "$out" '"batchId":"batch-0001"' '"commitSeq":1' '"commitSeq":2' '"numRowsTotal":4'
ok

step='a partition'\''s state'
out=$(
curl -s 'localhost:8787/v1/streams/orders/state?partition=0' -H 'Authorization: Bearer dev-admin-token'
curl -s 'localhost:8787/v1/streams/orders/state?partition=4' -H 'Authorization: Bearer dev-admin-token'
)
expect "$out" '"partition":0' '"keys":[]' '"partition":4' '"rows":3' '{"key":"[\"evt_1\"]","eventTime":1795946400000,"expiresAt":1795947000000}'
ok

step='change a bound field'
out=$(
curl -si -X PUT localhost:8787/v1/streams/orders \
  -H 'Authorization: Bearer dev-admin-token' -H 'Content-Type: application/json' \
  -d '{"key": ["event_id"], "eventTime": "event_ts", "watermarkDelay": "10 minutes", "partitions": 16,
       "schema": {"event_id": "string", "amount": "double", "event_ts": "timestamp"}}'
)
expect "$out" '409 Conflict' 'problems/bound-field-changed' '"path":"partitions"'
ok

step='change mutable fields'
out=$(
curl -si -X PUT localhost:8787/v1/streams/orders \
  -H 'Authorization: Bearer dev-admin-token' -H 'Content-Type: application/json' \
  -d '{"key": ["event_id"], "eventTime": "event_ts", "watermarkDelay": "15 minutes",
       "schema": {"event_id": "string", "amount": "double", "event_ts": "timestamp"},
       "sources": {"shopify": {}, "stripe": {"watermarkDelay": "2 hours"}}}'
)
expect "$out" '200 OK' '"status":"updated"' '"watermarkDelay":900000' '"stripe":{"watermarkDelay":7200000}'
ok

step='three single-row batches'
out=$(
curl -s -X POST localhost:8787/v1/streams/orders/events -H 'Authorization: Bearer dev-admin-token' \
  -H 'X-Source: shopify' -d '{"event_id": "evt_7", "amount": 1, "event_ts": "2026-11-29T11:00:00Z"}'
curl -s -X POST localhost:8787/v1/streams/orders/events -H 'Authorization: Bearer dev-admin-token' \
  -H 'X-Source: stripe' -d '{"event_id": "evt_8", "amount": 2, "event_ts": "2026-11-29T12:00:00Z"}'
curl -s -X POST localhost:8787/v1/streams/orders/events -H 'Authorization: Bearer dev-admin-token' \
  -d '{"event_id": "evt_9", "amount": 2, "event_ts": "2026-11-29T12:00:00Z"}'
)
expect "$out" '"source":"shopify"' '"source":"stripe"' '"source":"default"'
# watermarkAfter: 09:55 (stripe silent), 09:55 (never decreases), 10:00 (stripe's 12:00 - 2 hours)
[[ $out == *'"watermarkAfter":1795946100000'*'"watermarkAfter":1795946100000'*'"watermarkAfter":1795946400000'* ]] ||
  fail "expected watermarkAfter 09:55, 09:55, 10:00" "$out"
ok

step='the late and rejected lanes'
out=$(
curl -s localhost:8787/v1/streams/orders/late -H "Authorization: Bearer dev-admin-token"
curl -s localhost:8787/v1/streams/orders/rejected -H "Authorization: Bearer dev-admin-token"
)
expect "$out" '"reason":"late"' '"event_id":"evt_5"' '"batchId":"batch-0001","index":3' '"event_ts":"yesterday"'
ok

step='a token credential'
out=$(
curl -s -X POST localhost:8787/v1/streams/orders/sources/stripe/credentials \
  -H "Authorization: Bearer dev-admin-token" -H "Content-Type: application/json" \
  -d '{"type": "token", "label": "stripe relay"}'
# {"id":"cred_…","source":"stripe","type":"token","label":"stripe relay","createdAt":…,"secret":"edt_…"}
)
expect "$out" '"source":"stripe"' '"type":"token"' '"secret":"edt_'
ok

step='an HMAC-signed batch'
out=$(
SECRET=$(curl -s -X POST localhost:8787/v1/streams/orders/sources/stripe/credentials \
  -H "Authorization: Bearer dev-admin-token" -H "Content-Type: application/json" \
  -d '{"type": "hmac", "label": "stripe signer"}' | sed 's/.*"secret":"\([^"]*\)".*/\1/')
body='{"event_id": "evt_10", "amount": 4, "event_ts": "2026-11-29T12:05:00Z"}'; t=$(date +%s); key=signed-0001
sig=$(printf 'v2\n%s\n%s\n%s\n%s\n%s\n%s' "$t" orders stripe "$key" application/json "$body" \
  | openssl dgst -sha256 -hmac "$SECRET" -hex | sed 's/.*= //')
curl -s -X POST localhost:8787/v1/streams/orders/events -H "X-Source: stripe" -H "Idempotency-Key: $key" \
  -H "X-Signature: t=$t,v2=$sig" -H "Content-Type: application/json" -d "$body"
)
expect "$out" '"batchId":"signed-0001"' '"source":"stripe"' '"replayed":false' '"watermark":1795946400000' '"watermarkAfter":1795946700000' '"emitted":1'
ok

step='delete the stream'
out=$(
curl -si -X DELETE localhost:8787/v1/streams/orders -H 'Authorization: Bearer dev-admin-token'
)
expect "$out" '204 No Content'
ok

step="clean up the README's stream"
out=$(curl -si -X DELETE localhost:8787/v1/streams/demo -H 'Authorization: Bearer dev-admin-token')
expect "$out" "204 No Content"
ok
for stream in purchases clicks; do
  step="clean up the README's stream $stream"
  out=$(curl -si -X DELETE localhost:8787/v1/streams/$stream -H 'Authorization: Bearer dev-admin-token')
  expect "$out" "204 No Content"
  ok
done

echo "walkthrough: all steps passed against $HOST:$PORT"
