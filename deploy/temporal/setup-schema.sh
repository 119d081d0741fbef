#!/bin/sh
# Creates Temporal's two databases on the PostgreSQL of docker-compose.yml
# and brings their schemas up to the version of this admin-tools image
# (temporalio/admin-tools; the schema files ship in it under
# /etc/temporal/schema). Every step is idempotent: the databases are created
# only when missing, setup-schema only records version 0.0 on an empty
# database, and update-schema applies only the versions not yet applied. So
# it runs on every `docker compose up`, and upgrades the schema when the
# images' tag is raised.
#   SQL_PLUGIN, SQL_HOST, SQL_PORT, SQL_USER, SQL_PASSWORD  where and as whom
#   (temporal-sql-tool's own variables)
#   SQL_PASSWORD_FILE  the password from a file instead (a compose secret)
set -eu

if [ -n "${SQL_PASSWORD_FILE:-}" ]; then
	SQL_PASSWORD=$(cat "$SQL_PASSWORD_FILE")
	export SQL_PASSWORD
fi
: "${SQL_PLUGIN:?}" "${SQL_HOST:?}" "${SQL_USER:?}" "${SQL_PASSWORD:?}"
schemas=/etc/temporal/schema/postgresql/v12

for pair in temporal:temporal temporal_visibility:visibility; do
	db=${pair%%:*}
	schema=${pair#*:}
	echo "Temporal's $schema schema in database $db"
	temporal-sql-tool --db "$db" create
	temporal-sql-tool --db "$db" setup-schema -v 0.0
	temporal-sql-tool --db "$db" update-schema -d "$schemas/$schema/versioned"
done
echo "Temporal's schemas are up to date"
