package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"strconv"
	"text/tabwriter"
)

// The list commands (failed, scheduled list) read every page of their
// list: the API answers a page at a time (docs/http-api.md, "Lists"), and
// an operator must reach every row, however many there are. One piece of
// code follows the pages for all of them (readPages).

// pageFlags are a list command's flags: the page size it asks for, and
// the cursor it starts after.
type pageFlags struct {
	limit  *int
	cursor *string
}

// definePageFlags declares -limit and -cursor on fs.
func definePageFlags(fs *flag.FlagSet) pageFlags {
	return pageFlags{
		limit: fs.Int("limit", 0, "rows per page asked of the API, 1 to 1000 (0: the API's default, 100); every page is read, whatever its size"),
		cursor: fs.String("cursor", "", "start after this cursor (a next_cursor of -o json, or the one an interrupted listing printed) "+
			"instead of at the first row"),
	}
}

// readPages GETs path with query q, page after page, from p's cursor (or
// the first page) until the API's next_cursor is null, and hands each
// answer, as it came, to page, in order. A page that can't be read stops
// the listing: the error names the cursor to start again from (-cursor),
// after the pages already handed over.
func (c *apiClient) readPages(ctx context.Context, path string, q url.Values, p pageFlags, what string, page func(raw json.RawMessage) error) error {
	switch {
	case *p.limit < 0:
		return usageErrorf("-limit: must be a page size from 1 to 1000, or 0 for the API's default")
	case *p.limit > 0:
		q.Set("limit", strconv.Itoa(*p.limit))
	}
	cursor := *p.cursor
	for n := 1; ; n++ {
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		var answer struct {
			NextCursor *string `json:"next_cursor"`
		}
		raw, err := c.read(ctx, path+"?"+q.Encode(), what, &answer)
		if err == nil {
			err = page(raw)
		}
		if err != nil && cursor != "" {
			// Its exit status is err's (%w).
			return fmt.Errorf("%w (page %d; start again from it with -cursor %s)", err, n, cursor)
		}
		if err != nil {
			return err
		}
		switch {
		case answer.NextCursor == nil:
			return nil
		case *answer.NextCursor == cursor || *answer.NextCursor == "":
			// An API that names the page it answered as the next would
			// be read for ever.
			return unavailable(fmt.Errorf("%s: page %d names itself (or nothing) as the next page: not the API's answer", what, n))
		}
		cursor = *answer.NextCursor
	}
}

// listRows prints every row of a list (member of each page's answer): with
// -o json each page's answer as it came, a JSON value a line; else a table,
// header first, then line(row) for each row, written page by page (its
// columns aligned within a page), so that a long listing streams.
func listRows[T any](ctx context.Context, c *apiClient, inv *invocation, path string, q url.Values, pages pageFlags, what, member, header string,
	line func(T) string) error {
	tw := tabwriter.NewWriter(inv.out, 0, 4, 2, ' ', 0)
	if !inv.json {
		fmt.Fprintln(tw, header)
	}
	return c.readPages(ctx, path, q, pages, what, func(raw json.RawMessage) error {
		if inv.json {
			return printJSON(inv.out, raw)
		}
		var answer map[string]json.RawMessage
		var rows []T
		if err := json.Unmarshal(raw, &answer); err != nil {
			return unavailable(fmt.Errorf("%s: decode answer: %w", what, err))
		}
		if err := json.Unmarshal(answer[member], &rows); err != nil {
			return unavailable(fmt.Errorf("%s: decode answer's %s: %w", what, member, err))
		}
		for _, r := range rows {
			fmt.Fprintln(tw, line(r))
		}
		return tw.Flush()
	})
}
