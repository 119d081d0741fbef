-- The service's role as the service sees it at start (db/roles.go): the
-- database's roles are docs/operations.md's, "The database's roles".

-- name: Owner
-- Whom this session is (current_user), and whether it may do what the
-- migrator may: a superuser, or a member of the role that owns the books'
-- accounts table (its owner, or one that can SET ROLE to it); and whether
-- the schema has that table yet (migrated).
SELECT current_user::text, r.rolsuper OR COALESCE(pg_has_role(current_user, c.relowner, 'MEMBER'), false), c.oid IS NOT NULL
FROM pg_roles r LEFT JOIN pg_class c ON c.oid = to_regclass('accounts')
WHERE r.rolname = current_user
