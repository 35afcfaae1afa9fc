package reports

import (
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/rmqtorture/rmqtorture/scenario"
)

var resourceHeader = []string{"mode", "burst CPU s", "drain CPU s", "CPU s per 100k msgs", "peak RSS MiB (so far)", "ledger B/id"}

// resourceTable is one row per mode that recorded rmqtorture's own
// resource use (scenario.ResourceUse); rows is nil when none did (an older
// result, or a system without getrusage).
func resourceTable(r *scenario.Result) ([]string, [][]string) {
	if !slices.ContainsFunc(r.Modes, func(m scenario.ModeResult) bool { return m.Resources != nil }) {
		return nil, nil
	}
	var rows [][]string
	for _, m := range r.Modes {
		u := m.Resources
		if u == nil {
			rows = append(rows, []string{label(m), "-", "-", "-", "-", "-"})
			continue
		}
		per := "-"
		if m.Sent > 0 {
			per = seconds(u.CPUPer100kS)
		}
		rows = append(rows, []string{label(m), seconds(u.BurstCPUS), seconds(u.DrainCPUS), per,
			strconv.FormatFloat(float64(u.PeakRSSBytes)/(1<<20), 'f', 1, 64), strconv.FormatFloat(u.LedgerBytesPerID, 'f', 1, 64)})
	}
	return resourceHeader, rows
}

// seconds renders a CPU time in s with two decimals (getrusage counts in
// µs, scheduler ticks in practice).
func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 2, 64) }

// resourceLegend is the one line under the resource table.
const resourceLegend = "rmqtorture's own process (getrusage, user + system CPU; not the broker): CPU over the burst and over the drain; CPU per 100,000 ids sent over both; peak resident memory so far when the mode ended (the kernel cannot reset it, so a later mode's figure covers the modes before it); the message ledger's state per id."

// resourcesPlain writes the resource table for the terminal (-o wide);
// nothing when no mode recorded it.
func resourcesPlain(w io.Writer, r *scenario.Result) error {
	hdr, rows := resourceTable(r)
	if rows == nil {
		return nil
	}
	fmt.Fprintln(w, "resources:", resourceLegend)
	return table(w, false, hdr, rows)
}

// resourcesSection writes report.md's resource section; nothing when no
// mode recorded it.
func resourcesSection(w io.Writer, r *scenario.Result) error {
	hdr, rows := resourceTable(r)
	if rows == nil {
		return nil
	}
	fmt.Fprintf(w, "\n## Resources of rmqtorture\n\n")
	if err := table(w, true, hdr, rows); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", resourceLegend)
	return nil
}
