package workflows

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/durable"
)

// The custom search attributes of every PIX workflow run, by which the
// Temporal UI (and `temporal workflow list --query`) finds a PIX. They must
// be registered on the namespace before a worker starts: the dev command
// does it (`pixd temporal-setup`); on a real cluster, an operator does it
// once (docs/operations.md, "Finding a PIX in the Temporal UI").
var (
	AttrEndToEndID  = temporal.NewSearchAttributeKeyKeyword("PixEndToEndId")
	AttrAccountID   = temporal.NewSearchAttributeKeyKeyword("PixAccountId")
	AttrAmountCents = temporal.NewSearchAttributeKeyInt64("PixAmountCents")
	// AttrStatus follows the PIX: an incoming one's inbox status (pending,
	// done, failed); an outgoing one's transfer status (debited, submitted,
	// settled, refunded).
	AttrStatus = temporal.NewSearchAttributeKeyKeyword("PixStatus")
	// AttrPSP is the PSP whose signature authenticated the notification.
	AttrPSP = temporal.NewSearchAttributeKeyKeyword("PixPsp")
)

// SearchAttributes are the custom search attributes with their types.
var SearchAttributes = map[string]enums.IndexedValueType{
	AttrEndToEndID.GetName():  enums.INDEXED_VALUE_TYPE_KEYWORD,
	AttrAccountID.GetName():   enums.INDEXED_VALUE_TYPE_KEYWORD,
	AttrAmountCents.GetName(): enums.INDEXED_VALUE_TYPE_INT,
	AttrStatus.GetName():      enums.INDEXED_VALUE_TYPE_KEYWORD,
	AttrPSP.GetName():         enums.INDEXED_VALUE_TYPE_KEYWORD,
}

// Listing is what a PIX's workflow run starts with for the Temporal UI: its
// search attributes and its memo. Empty fields are left out.
type Listing struct {
	EndToEndID  string
	AccountID   string // empty while an API Pix notification's key is unresolved
	AmountCents int64
	Status      string
	PSP         string
	// Memo is shown on the run's page but not searchable: the payer of an
	// incoming PIX, the payee's key of an outgoing one.
	Memo map[string]any
}

// Workflow is what durable.StartOnce starts: workflow name under id, on
// taskQueue, listed as l says.
func (l Listing) Workflow(id, taskQueue, name string) durable.Workflow {
	return durable.Workflow{ID: id, TaskQueue: taskQueue, Name: name, SearchAttributes: l.searchAttributes(), Memo: l.Memo}
}

// ListingOf is what a due row's run is listed under (StartDue; a saga
// whose start does more than start, the devolução's, which signals an open
// run, lists its run with it).
func ListingOf(due durable.Due) Listing {
	l := Listing{EndToEndID: due.EndToEndID, AmountCents: due.AmountCents, Status: due.Status, Memo: due.Memo}
	if due.AccountID != nil {
		l.AccountID = *due.AccountID
	}
	if due.PSP != nil {
		l.PSP = *due.PSP
	}
	return l
}

func (l Listing) searchAttributes() temporal.SearchAttributes {
	updates := []temporal.SearchAttributeUpdate{AttrEndToEndID.ValueSet(l.EndToEndID), AttrStatus.ValueSet(l.Status)}
	if l.AccountID != "" {
		updates = append(updates, AttrAccountID.ValueSet(l.AccountID))
	}
	if l.AmountCents > 0 {
		updates = append(updates, AttrAmountCents.ValueSet(l.AmountCents))
	}
	if l.PSP != "" {
		updates = append(updates, AttrPSP.ValueSet(l.PSP))
	}
	return temporal.NewSearchAttributes(updates...)
}

// searchAttributesVersion gates the upserts: runs recorded before them
// (credit_done.json, credit_failed.json, the transfers' histories under
// testdata) replay without them. A credit's input may name a later listing
// version (CreditListingVersion), which upserts the same.
const searchAttributesVersion = 1

// ListingVersion reads, once at the start of a run, whether the run upserts
// its search attributes (UpsertStatus): a saga's workflow listed like the
// credit's (its due row's listing, StartDue) calls it first.
func ListingVersion(ctx workflow.Context) workflow.Version {
	return workflow.GetVersion(ctx, "pix-search-attributes", workflow.DefaultVersion, searchAttributesVersion)
}

// UpsertStatus moves the run's PixStatus (and any other attribute given)
// as the PIX moves, on runs of a version that does. A refused upsert is a
// programming error (an attribute of the wrong type); the money has moved
// either way, so it is logged, not raised.
func UpsertStatus(ctx workflow.Context, version workflow.Version, status string, more ...temporal.SearchAttributeUpdate) {
	if version < searchAttributesVersion {
		return
	}
	if err := workflow.UpsertTypedSearchAttributes(ctx, append(more, AttrStatus.ValueSet(status))...); err != nil {
		workflow.GetLogger(ctx).Error("could not upsert the search attributes", "status", status, "error", err)
	}
}

// DevServerFlags are the `temporal server start-dev` flags that register
// the search attributes as the dev server starts.
func DevServerFlags() []string {
	var flags []string
	for _, name := range slices.Sorted(maps.Keys(SearchAttributes)) {
		flags = append(flags, "--search-attribute", name+"="+typeName(SearchAttributes[name]))
	}
	return flags
}

// MissingSearchAttributesError says which search attributes the namespace
// lacks, and how to register them.
type MissingSearchAttributesError struct {
	Namespace string
	Missing   map[string]enums.IndexedValueType
}

func (e *MissingSearchAttributesError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the Temporal namespace %q lacks the PIX search attributes; register them with `pixd temporal-setup`, or:", e.Namespace)
	for _, name := range slices.Sorted(maps.Keys(e.Missing)) {
		fmt.Fprintf(&b, "\n  temporal operator search-attribute create --namespace %s --name %s --type %s", e.Namespace, name, typeName(e.Missing[name]))
	}
	return b.String()
}

// typeName is the CLI's name of an attribute type (Keyword, Int).
func typeName(t enums.IndexedValueType) string {
	s := strings.TrimPrefix(t.String(), "INDEXED_VALUE_TYPE_")
	return s[:1] + strings.ToLower(s[1:])
}

// CheckSearchAttributes returns a *MissingSearchAttributesError unless
// every PIX search attribute is registered on the namespace with its type.
// A worker checks before it starts: a run started with an unregistered
// attribute is refused by the server, and an upsert of one fails the
// workflow task over and over.
func CheckSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	missing, err := missingSearchAttributes(ctx, c, namespace)
	if err != nil || len(missing) == 0 {
		return err
	}
	return &MissingSearchAttributesError{Namespace: namespace, Missing: missing}
}

// RegisterSearchAttributes registers the PIX search attributes the
// namespace lacks (which needs the operator's permission). An attribute
// registered with another type is an error: it needs a human.
func RegisterSearchAttributes(ctx context.Context, c client.Client, namespace string) (added []string, err error) {
	missing, err := missingSearchAttributes(ctx, c, namespace)
	if err != nil || len(missing) == 0 {
		return nil, err
	}
	if _, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
		Namespace: namespace, SearchAttributes: missing,
	}); err != nil {
		return nil, fmt.Errorf("register search attributes on %s: %w", namespace, err)
	}
	return slices.Sorted(maps.Keys(missing)), nil
}

func missingSearchAttributes(ctx context.Context, c client.Client, namespace string) (map[string]enums.IndexedValueType, error) {
	resp, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: namespace})
	if err != nil {
		return nil, fmt.Errorf("list search attributes of %s: %w", namespace, err)
	}
	missing := map[string]enums.IndexedValueType{}
	for name, want := range SearchAttributes {
		got, ok := resp.GetCustomAttributes()[name]
		switch {
		case !ok:
			missing[name] = want
		case got != want:
			return nil, fmt.Errorf("search attribute %s is registered on %s as %s, not %s: it must be renamed or the namespace cleaned by hand",
				name, namespace, typeName(got), typeName(want))
		}
	}
	return missing, nil
}

// StartDue starts the workflow name under id on taskQueue for a due row of
// a durable queue (durable.StartOnce), listed as the row says: what a
// saga's durable source does, a saga of its own package's included.
func StartDue(ctx context.Context, c client.Client, due durable.Due, id, taskQueue, name string, input any) (started bool, err error) {
	return durable.StartOnce(ctx, c, ListingOf(due).Workflow(id, taskQueue, name), input)
}
