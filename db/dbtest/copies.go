package dbtest

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// A test's database (a copy of the template) is made ahead and dropped
// behind by one goroutine of the test process (copier.run), beside the
// tests, instead of in each test's own time: a copy's CREATE DATABASE
// took 0.3–1.8 s at load and its drop 0.5–1 s, most of each waiting on
// PostgreSQL's WAL flush, and each package's tests paid both, one test
// after another (over 150 of them in db alone). One copy at most is made
// ahead, and only once a second was asked (a package with one test using
// a database makes no spare), and two drops at most wait: past that, a
// test's cleanup drops its own, as before. It is never more than one
// PostgreSQL statement at a time beside the tests.
//
// A process ends with its spare and its waiting drops left (a killed test
// leaves its database too): the databases are named by a token of the
// process and the time they were made (pix_t_<token>_<unix seconds>_<n>),
// and the process holds an advisory lock on its token for its life (on
// the template's in-use session). Each process drops, once, the copies
// (sweepLeftovers) made more than leftoverAge ago (well past a package's
// -timeout: no test of the process that made one still runs) of the
// tokens whose lock no session of the cluster holds (pg_locks: an
// advisory lock is a database's, and a checkout on another database of
// the cluster holds its own there). Both are needed: a process whose lock
// session died (idle_session_timeout, a server restart,
// pg_terminate_backend) lives on, so it checks that it still holds its
// lock before each copy it makes and fails its tests if not, and the age
// spares the copies it made before. Behind PgBouncer's transaction
// pooling a session's advisory lock means nothing: the tests connect to
// PostgreSQL itself.

// processClass is the first key of the advisory lock that says a process
// with a token lives (the second: hashtext of the token).
const processClass = 7_369

// copyPattern matches the names of the copies; its groups are the token
// and the time the copy was made (unix seconds).
var copyPattern = regexp.MustCompile(`^pix_t_([0-9a-f]{16})_([0-9]{10})_[0-9]+$`)

// leftoverAge is how long ago a copy of an ended process must have been
// made to be swept: well past the tests' -timeout (25 minutes), so that a
// copy a living process uses is never swept, even if its lock is lost.
const leftoverAge = 2 * time.Hour

// waitingDrops is how many copies wait to be dropped behind at most.
const waitingDrops = 2

// spare is a copy made for a test: its database's name, or why it could
// not be made.
type spare struct {
	name string
	err  error
}

// copier makes the copies of template (each test's database) and drops
// them, in run's goroutine.
type copier struct {
	template, token string
	want            chan chan spare
	drops           chan dropping
	made            int
	// lock is the session holding the token's lock (processToken).
	lock *pgx.Conn
	// create, drop and sweep are the statements (createCopy, dropDatabase,
	// sweepLeftovers; a test's fakes).
	create func(ctx context.Context, name string) error
	drop   func(ctx context.Context, name string) error
	sweep  func(ctx context.Context) error
	// failed holds the drops made behind that failed, until a test
	// reports them (failedDrops).
	mu     sync.Mutex
	failed []error
}

// dropping is a test's copy to drop behind it.
type dropping struct{ name, test string }

// newCopier is a copier of template for the process of token, locked on
// session lock.
func newCopier(template, token string, lock *pgx.Conn) *copier {
	c := &copier{template: template, token: token, lock: lock,
		want: make(chan chan spare), drops: make(chan dropping, waitingDrops), drop: dropDatabase}
	c.create = c.createCopy
	c.sweep = func(ctx context.Context) error {
		return sweepLeftovers(ctx, copyPattern, token, leftoverAge, time.Now())
	}
	return c
}

var copies struct {
	once sync.Once
	c    *copier
	err  error
}

// newCopy returns a new copy of the template (a database name), made
// ahead if there is one.
func newCopy(ctx context.Context, templateName string) (string, error) {
	copies.once.Do(func() {
		token, err := processToken(ctx, template.inUse)
		if err != nil {
			copies.err = err
			return
		}
		c := newCopier(templateName, token, template.inUse)
		go c.run(context.WithoutCancel(ctx))
		copies.c = c
	})
	if copies.err != nil {
		return "", copies.err
	}
	reply := make(chan spare, 1)
	copies.c.want <- reply
	s := <-reply
	return s.name, s.err
}

// dropCopy drops test's copy behind, or at once (its error returned) if
// waitingDrops wait already.
func dropCopy(ctx context.Context, name, test string) error {
	return copies.c.dropLater(ctx, dropping{name: name, test: test})
}

func (c *copier) dropLater(ctx context.Context, d dropping) error {
	select {
	case c.drops <- d:
		return nil
	default:
		return c.drop(ctx, d.name)
	}
}

// dropBehind drops d, keeping its error for failedDrops: a drop fails
// mostly for what the test left (a prepared transaction, a session that
// would not end), which its cleanup used to report.
func (c *copier) dropBehind(ctx context.Context, d dropping) {
	if err := c.drop(ctx, d.name); err != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.failed = append(c.failed, fmt.Errorf("%s's database %s, dropped behind it: %w", d.test, d.name, err))
	}
}

// takeFailed is the drops made behind that failed since it was last
// called, joined.
func (c *copier) takeFailed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := errors.Join(c.failed...)
	c.failed = nil
	return err
}

// failedDrops is the process's drops made behind that failed since a test
// last asked, which the test that asks reports: the earliest a test of the
// process sees them, as the test whose copy it was has ended. (The last
// test's are not reported; its copy stays until swept.)
func failedDrops() error {
	if copies.c == nil {
		return nil
	}
	return copies.c.takeFailed()
}

// run serves the tests' asks, and meanwhile makes a spare ahead, drops
// what waits, and sweeps the ended processes' copies once: a test that
// asks is served first, between the other statements.
func (c *copier) run(ctx context.Context) {
	var ahead *spare
	asked, swept := 0, false
	serve := func(reply chan spare) {
		asked++
		// A spare that failed (too many connections at a peak, a template
		// in use past the retries) failed then, maybe minutes ago: the
		// test gets a copy made now, retried as usual.
		if ahead == nil || ahead.err != nil {
			s := c.copy(ctx)
			ahead = &s
		}
		reply <- *ahead
		ahead = nil
	}
	for {
		var idle func()
		switch {
		case ahead == nil && asked >= 2:
			idle = func() { s := c.copy(ctx); ahead = &s }
		case len(c.drops) > 0:
			idle = func() { c.dropBehind(ctx, <-c.drops) }
		case !swept && asked > 0:
			// Once, failed or not: what it failed to drop (another
			// process's leftovers, not a test's) stays for the next
			// process's sweep.
			idle = func() { _ = c.sweep(ctx); swept = true }
		}
		if idle == nil {
			select {
			case reply := <-c.want:
				serve(reply)
			case d := <-c.drops:
				c.dropBehind(ctx, d)
			}
			continue
		}
		select {
		case reply := <-c.want:
			serve(reply)
		default:
			idle()
		}
	}
}

// copy makes the next copy, if the process still holds its token's lock.
func (c *copier) copy(ctx context.Context) spare {
	c.made++
	name := fmt.Sprintf("pix_t_%s_%d_%d", c.token, time.Now().Unix(), c.made)
	if err := c.holdsLock(ctx); err != nil {
		return spare{name: name, err: err}
	}
	return spare{name: name, err: c.create(ctx, name)}
}

// holdsLock errs unless c's lock session still holds the token's lock: a
// copy made without it would be swept by another process once old enough
// (and the process's other copies with it), which a test would not see.
func (c *copier) holdsLock(ctx context.Context) error {
	if c.lock == nil { // a test's copier
		return nil
	}
	const lost = "this process's session holding its token's lock ended (idle_session_timeout, a server restart, pg_terminate_backend?): its copies would be swept under its tests"
	var held bool
	if err := c.lock.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = pg_backend_pid() AND `+tokenLock+`)`, processClass, c.token).Scan(&held); err != nil {
		return fmt.Errorf("%s: %w", lost, err)
	}
	if !held {
		return errors.New(lost)
	}
	return nil
}

// tokenLock selects, in pg_locks, the granted advisory lock of the token
// $2 (pg_try_advisory_lock($1, hashtext($2)): the second key is objid, an
// oid, and objsubid 2 says a lock of two keys).
const tokenLock = `locktype = 'advisory' AND granted AND classid::int8 = $1 AND objid::int8 = (hashtext($2)::int8 & 4294967295) AND objsubid = 2`

// createCopy creates database name, a copy of the template.
func (c *copier) createCopy(ctx context.Context, name string) error {
	return retryInUse(ctx, func() error {
		return exec(ctx, BaseURL(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{c.template}.Sanitize())
	})
}

// processToken is the process's token, locked on session lock (the
// template's in-use session, taken before it: migratedTemplate), which
// lives as long as the process.
func processToken(ctx context.Context, lock *pgx.Conn) (string, error) {
	for {
		token := randomHex(8)
		var locked bool
		if err := lock.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, processClass, token).Scan(&locked); err != nil {
			// Copies made under a token not locked would be swept.
			return "", fmt.Errorf("lock the process's token: %w", err)
		}
		if locked {
			return token, nil
		}
		// Another living process's token has the same hashtext: another.
	}
}

// sweepLeftovers drops the copies (names matching pattern: groups token
// and unix seconds) of the ended processes made more than age before now:
// each token but own whose lock no session of the cluster holds. A copy
// that fails to be dropped stays for the next sweep; the others are
// dropped still, and the errors joined.
func sweepLeftovers(ctx context.Context, pattern *regexp.Regexp, own string, age time.Duration, now time.Time) error {
	admin, err := pgx.Connect(ctx, BaseURL())
	if err != nil {
		return err
	}
	defer admin.Close(ctx)
	rows, err := admin.Query(ctx, `SELECT datname FROM pg_database WHERE datname ~ $1 ORDER BY datname`, pattern.String())
	if err != nil {
		return err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	byToken := map[string][]string{}
	for _, name := range names {
		// PostgreSQL's ~ is not Go's regexp: a name it matched that Go's
		// does not is not taken for a copy.
		m := pattern.FindStringSubmatch(name)
		if m == nil || m[1] == own {
			continue
		}
		made, err := strconv.ParseInt(m[2], 10, 64)
		if err != nil || now.Sub(time.Unix(made, 0)) < age {
			continue
		}
		byToken[m[1]] = append(byToken[m[1]], name)
	}
	var errs []error
	for token, names := range byToken {
		var lives bool
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE `+tokenLock+`)`, processClass, token).Scan(&lives); err != nil {
			return errors.Join(append(errs, err)...)
		}
		if lives {
			continue
		}
		for _, name := range names {
			if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
				errs = append(errs, fmt.Errorf("drop the leftover copy %s: %w", name, err))
			}
		}
	}
	return errors.Join(errs...)
}

// exec runs sql on a session of its own to the database of url.
func exec(ctx context.Context, url, sql string) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}
