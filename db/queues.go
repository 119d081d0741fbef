package db

import (
	_ "embed"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"text/template"

	"github.com/pixbank/pix/internal/durable/rows"
)

// A QueueSpec declares a saga's durable queue: its open rows, in its own
// table, whose workflows a durable.Dispatcher starts. Its three statements
// (ClaimDue, MarkDispatched, DeferDispatch: see DueQueue) are built from it,
// from the one text in queries/due.sql.tmpl, when the package is
// initialised (DeclareQueue), so every queue claims, locks, fences and
// rechecks alike. The fields holding SQL are expressions over the queue's
// row, named m.
type QueueSpec struct {
	// Name names the statements in traces: "credits" → credits.ClaimDue.
	Name string
	// Table is the queue's table; it has the columns the dispatch keeps:
	// dispatch_due_at (when the row is due; the lease of a claim) and
	// dispatched_at (when a run of the row's current drive began).
	Table string
	// Key is the table's key column, and KeyType its SQL type (text or
	// uuid): the type of the keys MarkDispatched and DeferDispatch are given
	// (as text, which ClaimDue returns). Rows are locked in key order, text
	// in byte order (COLLATE "C").
	Key, KeyType string
	// Channel is the notification channel that says rows came due.
	Channel string
	// Open is the predicate of an open row: one whose workflow must run.
	// An open row is due once its dispatch_due_at has passed.
	Open string
	// Attempts is the row's failed attempts (rows.Due.Attempts), "0" for
	// a saga that keeps none.
	Attempts string
	// Drive is the row's current drive (rows.Due.Drive), "1" for a saga
	// whose rows have one: the records of a claim made in another drive
	// change nothing (see Signalled).
	Drive string
	// Signalled, when set, is the column that counts the drives past the
	// first that the row's run was told of: a later drive is signalled to
	// the open run, not started anew (a refund's PSP notice; the drive is
	// then 1 + the notices). MarkDispatched then records the run and the
	// drive signalled whatever drive the row was claimed in, and fences only
	// the recheck's due time by it.
	Signalled string
	// NotBefore, when set, is the column of the time until which the row's
	// run waits on purpose (a durable timer until a date): its rechecks
	// come no earlier, since until then the run could not have changed (a
	// run that waits 30 days is not started again, a no-op, every Max); a
	// run lost meanwhile is started again at that time. NULL: no wait. A
	// claim and a deferred start are not held back by it.
	NotBefore string
	// Listing is what the run is listed under, as rows.Due reads it.
	Listing Listing
}

// Listing is what a run is listed under (rows.Due from EndToEndID on),
// each field the SQL expression of the rows.Due field of the same name.
type Listing struct {
	EndToEndID, AccountID, AmountCents, Status, PSP, Memo, Since, Traceparent string
}

// dueQueue is a declared queue and its statements.
type dueQueue struct {
	QueueSpec
	claim, markDispatched, deferDispatch string
}

// dueQueues is every queue declared (DeclareQueue), in the order the
// package's variables were initialised: the one list of the durable
// queues.
var dueQueues []*dueQueue

//go:embed queries/due.sql.tmpl
var dueTemplateText string

var dueTemplate = template.Must(template.New("due.sql.tmpl").Option("missingkey=error").Parse(dueTemplateText))

// sqlName is a plain SQL identifier, as a table, key or column spliced into
// the statements must be.
var sqlName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// A Queue is a saga's durable queue, declared (DeclareQueue): the saga's
// store hands it to the dispatchers as Store.DueQueue(q).
type Queue struct{ queue *dueQueue }

// DeclareQueue builds the statements of the queue spec declares and adds
// it to the one list of the durable queues (dueQueues). It panics on a
// declaration that is incomplete, names an identifier that is not plain,
// does not give every rows.Due field its column, or shares its name,
// channel or table with a queue declared before: the process does not
// start (nor does any test) with a queue it can't build. Call it only while
// the caller's package variables are initialised (a package-level
// variable), as BindQueries.
func DeclareQueue(spec QueueSpec) Queue {
	q, err := buildQueue(spec)
	if err != nil {
		panic(fmt.Sprintf("db: queue %q: %v", spec.Name, err))
	}
	for _, other := range dueQueues {
		if other.Name == spec.Name || other.Channel == spec.Channel || other.Table == spec.Table {
			panic(fmt.Sprintf("db: queues %q and %q share a name, channel or table", other.Name, spec.Name))
		}
	}
	for name, sql := range map[string]string{"ClaimDue": q.claim, "MarkDispatched": q.markDispatched, "DeferDispatch": q.deferDispatch} {
		statementNames[sql] = spec.Name + "." + name
	}
	dueQueues = append(dueQueues, q)
	return Queue{q}
}

// dueColumn is one column ClaimDue returns: its rows.Due name and the
// expression it is.
type dueColumn struct{ Name, Expr string }

func buildQueue(spec QueueSpec) (*dueQueue, error) {
	for what, v := range map[string]string{"Name": spec.Name, "Channel": spec.Channel, "Open": spec.Open, "Attempts": spec.Attempts, "Drive": spec.Drive} {
		if strings.TrimSpace(v) == "" {
			return nil, fmt.Errorf("%s is empty", what)
		}
	}
	for what, v := range map[string]string{"Table": spec.Table, "Key": spec.Key} {
		if !sqlName.MatchString(v) {
			return nil, fmt.Errorf("%s %q is no plain SQL name", what, v)
		}
	}
	for what, v := range map[string]string{"Signalled": spec.Signalled, "NotBefore": spec.NotBefore} {
		if v != "" && !sqlName.MatchString(v) {
			return nil, fmt.Errorf("column %s %q is no plain SQL name", what, v)
		}
	}
	byteOrder := ""
	switch spec.KeyType {
	case "text":
		byteOrder = ` COLLATE "C"`
	case "uuid":
	default:
		return nil, fmt.Errorf("KeyType %q is neither text nor uuid", spec.KeyType)
	}
	columns, err := dueColumns(spec)
	if err != nil {
		return nil, err
	}
	data := struct {
		QueueSpec
		ByteOrder string
		Columns   []dueColumn
	}{spec, byteOrder, columns}
	q := &dueQueue{QueueSpec: spec}
	for name, dst := range map[string]*string{"ClaimDue": &q.claim, "MarkDispatched": &q.markDispatched, "DeferDispatch": &q.deferDispatch} {
		var b strings.Builder
		if err := dueTemplate.ExecuteTemplate(&b, name, data); err != nil {
			return nil, fmt.Errorf("build %s: %w", name, err)
		}
		*dst = strings.TrimSpace(b.String())
	}
	return q, nil
}

// dueColumns is what spec's ClaimDue returns: every field of rows.Due, in
// its order, named as its db tag (DueQueue.Claim reads them by name). The
// key is returned as text whatever its type.
func dueColumns(spec QueueSpec) ([]dueColumn, error) {
	due := reflect.TypeFor[rows.Due]()
	listing := reflect.ValueOf(spec.Listing)
	var columns []dueColumn
	for f := range due.Fields() {
		name := f.Tag.Get("db")
		if name == "" {
			return nil, fmt.Errorf("rows.Due.%s has no db name", f.Name)
		}
		var expr string
		switch f.Name {
		case "Key":
			expr = "m." + spec.Key + "::text"
		case "Attempts":
			expr = spec.Attempts
		case "Drive":
			expr = spec.Drive
		case "Dispatched":
			expr = "m.dispatched_at IS NOT NULL"
		default:
			v := listing.FieldByName(f.Name)
			if !v.IsValid() {
				return nil, fmt.Errorf("Listing has no %s (rows.Due.%s)", f.Name, f.Name)
			}
			expr = v.String()
		}
		if strings.TrimSpace(expr) == "" {
			return nil, fmt.Errorf("rows.Due.%s has no column", f.Name)
		}
		columns = append(columns, dueColumn{name, expr})
	}
	if listed := len(columns) - 4; listing.NumField() != listed {
		return nil, fmt.Errorf("Listing has %d fields, rows.Due lists %d", listing.NumField(), listed)
	}
	return columns, nil
}
