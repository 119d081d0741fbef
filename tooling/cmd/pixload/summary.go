package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// summarize prints the targets of several reports side by side (the runs of
// one make bench: each server, each topology), then each run's replica
// cost and soak.
func summarize(paths []string, w io.Writer) error {
	if len(paths) == 0 {
		return errors.New("summary: name the reports (pixload -json files)")
	}
	var reps []*Report
	for _, p := range paths {
		rep, err := readReport(p)
		if err != nil {
			return err
		}
		reps = append(reps, rep)
	}
	var figures []string
	cells := map[string]map[int]Target{}
	for i, rep := range reps {
		for _, t := range rep.Targets {
			if cells[t.Figure] == nil {
				figures = append(figures, t.Figure)
				cells[t.Figure] = map[int]Target{}
			}
			cells[t.Figure][i] = t
		}
	}
	if len(figures) > 0 {
		fmt.Fprintln(w, "targets, every run")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprint(tw, "  figure\ttarget")
		for _, rep := range reps {
			fmt.Fprintf(tw, "\t%s", rep.name())
		}
		fmt.Fprintln(tw)
		for _, fig := range figures {
			var target string
			for _, t := range cells[fig] {
				target = t.Target
			}
			fmt.Fprintf(tw, "  %s\t%s", fig, target)
			for i := range reps {
				t, ok := cells[fig][i]
				switch {
				case !ok:
					fmt.Fprint(tw, "\t")
				case t.Met == nil:
					fmt.Fprintf(tw, "\t%s", t.measured())
				default:
					fmt.Fprintf(tw, "\t%s (%s)", t.measured(), t.verdict())
				}
			}
			fmt.Fprintln(tw)
		}
		tw.Flush()
	}
	for _, rep := range reps {
		if rep.ReplicaCost != nil {
			printReplicaCost(w, rep.ReplicaCost)
		}
		if rep.Soak != nil {
			printSoak(w, rep.Soak)
		}
	}
	fmt.Fprintln(w, "\ninvariants")
	for _, rep := range reps {
		status := fmt.Sprintf("hold (%d PIX, %d credits)", rep.Invariants.InboxRows, rep.Invariants.Credits)
		if len(rep.Violations) > 0 {
			status = "VIOLATED: " + strings.Join(rep.Violations, "; ")
		}
		fmt.Fprintf(w, "  %s: %s\n", rep.name(), status)
	}
	return nil
}
