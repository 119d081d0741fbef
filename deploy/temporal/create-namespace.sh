#!/bin/sh
# Creates the namespace the PIX service runs in (TEMPORAL_NAMESPACE) once the
# server answers, unless it exists. The server is healthy when it starts
# listening (docker-compose.yml); its frontend may still refuse calls for a
# few seconds after that, hence the retries.
#   TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE
set -eu

: "${TEMPORAL_ADDRESS:?}" "${TEMPORAL_NAMESPACE:?}"
attempts=30
i=1
until temporal operator cluster health --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; do
	[ "$i" -lt "$attempts" ] || { echo "Temporal at $TEMPORAL_ADDRESS is not healthy after $attempts tries" >&2; exit 1; }
	i=$((i + 1))
	sleep 2
done
if temporal operator namespace describe --namespace "$TEMPORAL_NAMESPACE" --address "$TEMPORAL_ADDRESS" >/dev/null 2>&1; then
	echo "namespace $TEMPORAL_NAMESPACE exists"
	exit 0
fi
temporal operator namespace create --namespace "$TEMPORAL_NAMESPACE" --address "$TEMPORAL_ADDRESS"
echo "namespace $TEMPORAL_NAMESPACE created"
