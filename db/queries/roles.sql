-- The service's role as the service sees it at start, and as pixd migrate
-- sees the role it grants to (db/roles.go): the database's roles are
-- docs/operations.md's, "The database's roles".

-- name: Owner
-- Role $1 (NULL: this session's current_user), and whether it may do what
-- the migrator may: a superuser, or a member of the role that owns the
-- books' accounts table (its owner, or one that can SET ROLE to it);
-- whether the schema has that table yet (migrated); and what else would
-- let it take the fences down: owning the schema (or being a member of
-- pg_database_owner when that owns it: the database's owner is), which
-- drops any function of it; owning the database; CREATEROLE, with which
-- it grants itself the migrator; CREATE in the schema.
SELECT r.rolname::text, r.rolsuper OR COALESCE(pg_has_role(r.oid, c.relowner, 'MEMBER'), false), c.oid IS NOT NULL,
       array_remove(ARRAY[
           CASE WHEN pg_has_role(r.oid, n.nspowner, 'MEMBER') THEN format('owns the schema %s (a member of %s)', n.nspname, n.nspowner::regrole) END,
           CASE WHEN pg_has_role(r.oid, d.datdba, 'MEMBER') THEN format('owns the database %s (a member of %s)', d.datname, d.datdba::regrole) END,
           CASE WHEN r.rolcreaterole THEN 'has CREATEROLE (it may grant itself the migrator)' END,
           CASE WHEN has_schema_privilege(r.oid, n.oid, 'CREATE') THEN format('may CREATE in the schema %s', n.nspname) END], NULL)
FROM pg_roles r
CROSS JOIN pg_database d
LEFT JOIN pg_class c ON c.oid = to_regclass('accounts')
LEFT JOIN pg_namespace n ON n.nspname = current_schema()
WHERE r.rolname = COALESCE($1::text, current_user) AND d.datname = current_database()
