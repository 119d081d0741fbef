package dbtest

import (
	"context"
	"fmt"
	"regexp"
	"sync"

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
// process (pix_t_<token>_<n>), on which it holds an advisory lock for its
// life (on the template's in-use session), and each process drops, once,
// the databases of the tokens whose lock it gets, i.e. of processes that
// ended (sweepLeftovers).

// processClass is the first key of the advisory lock that says a process
// with a token lives (the second: hashtext of the token).
const processClass = 7_369

// copyPattern matches the names of the copies; its group is the token.
var copyPattern = regexp.MustCompile(`^pix_t_([0-9a-f]{16})_[0-9]+$`)

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
	drops           chan string
	made            int
	// create, drop and sweep are the statements (createCopy, dropDatabase,
	// sweepLeftovers; a test's fakes).
	create func(ctx context.Context, name string) error
	drop   func(ctx context.Context, name string) error
	sweep  func(ctx context.Context) error
}

// newCopier is a copier of template for the process of token.
func newCopier(template, token string) *copier {
	c := &copier{template: template, token: token,
		want: make(chan chan spare), drops: make(chan string, waitingDrops), drop: dropDatabase}
	c.create = c.createCopy
	c.sweep = func(ctx context.Context) error { return sweepLeftovers(ctx, copyPattern, token) }
	return c
}

var copies struct {
	once sync.Once
	c    *copier
}

// newCopy returns a new copy of the template (a database name), made
// ahead if there is one.
func newCopy(ctx context.Context, template string) (string, error) {
	copies.once.Do(func() {
		c := newCopier(template, processToken())
		go c.run(context.WithoutCancel(ctx))
		copies.c = c
	})
	reply := make(chan spare, 1)
	copies.c.want <- reply
	s := <-reply
	return s.name, s.err
}

// dropCopy drops a test's copy behind, or at once (its error returned)
// if waitingDrops wait already.
func dropCopy(ctx context.Context, name string) error {
	select {
	case copies.c.drops <- name:
		return nil
	default:
		return dropDatabase(ctx, name)
	}
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
			// Best effort: a copy not dropped is a process's leftover,
			// swept once the process ends.
			idle = func() { _ = c.drop(ctx, <-c.drops) }
		case !swept && asked > 0:
			idle = func() { _ = c.sweep(ctx); swept = true }
		}
		if idle == nil {
			select {
			case reply := <-c.want:
				serve(reply)
			case name := <-c.drops:
				_ = c.drop(ctx, name)
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

// copy makes the next copy.
func (c *copier) copy(ctx context.Context) spare {
	c.made++
	name := fmt.Sprintf("pix_t_%s_%d", c.token, c.made)
	return spare{name: name, err: c.create(ctx, name)}
}

// createCopy creates database name, a copy of the template.
func (c *copier) createCopy(ctx context.Context, name string) error {
	return retryInUse(ctx, func() error {
		return exec(ctx, BaseURL(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{c.template}.Sanitize())
	})
}

// processToken is the process's token, locked on the template's in-use
// session (taken before it: migratedTemplate), which lives as long as the
// process.
func processToken() string {
	for {
		token := randomHex(8)
		var locked bool
		err := template.inUse.QueryRow(context.Background(), `SELECT pg_try_advisory_lock($1, hashtext($2))`, processClass, token).Scan(&locked)
		if err != nil || locked {
			// Unlocked (the session failed): its copies are swept
			// early, by a process of a later run, at worst.
			return token
		}
		// Another living process's token has the same hashtext: another.
	}
}

// sweepLeftovers drops the copies (names matching pattern) of the ended
// processes: each token but own whose lock it gets at once, holding it
// while it drops them.
func sweepLeftovers(ctx context.Context, pattern *regexp.Regexp, own string) error {
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
		if token := pattern.FindStringSubmatch(name)[1]; token != own {
			byToken[token] = append(byToken[token], name)
		}
	}
	for token, names := range byToken {
		var ended bool
		if err := admin.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, hashtext($2))`, processClass, token).Scan(&ended); err != nil {
			return err
		}
		if !ended {
			continue
		}
		for _, name := range names {
			if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
				return fmt.Errorf("drop the leftover copy %s: %w", name, err)
			}
		}
		if _, err := admin.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, processClass, token); err != nil {
			return err
		}
	}
	return nil
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
