package cmd

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// With -o json, run prints result.json on stdout: one scenario's result
// is the JSON object itself (as its result.json), several scenarios'
// results are one JSON array of those objects, in run order, so stdout
// always holds exactly one JSON document. The array is closed when run
// returns, also after an error or Ctrl-C, or by a second Ctrl-C's partial
// report (the last: no scenario starts after it, and the process exits
// without waiting for run to return); it holds the results written.

// jsonArray is the state of -o json's array, shared by run and a second
// Ctrl-C's partial report (another goroutine).
type jsonArray struct {
	mu     sync.Mutex
	on     bool // several scenarios: their results form one array
	docs   int  // elements written
	closed bool
}

// jsonElement writes r as -o json prints it: the object alone, or, when
// several scenarios run, as the next element of the array (opening it
// before the first).
func (o *runOpts) jsonElement(w io.Writer, r *scenario.Result) error {
	a := &o.json
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.on {
		return reports.JSON(w, r)
	}
	if a.closed {
		return nil // after a second Ctrl-C closed the array: stdout stays one document
	}
	var buf bytes.Buffer
	if err := reports.JSON(&buf, r); err != nil {
		return err
	}
	sep := ",\n"
	if a.docs == 0 {
		sep = "[\n"
	}
	a.docs++
	_, err := fmt.Fprintf(w, "%s%s", sep, bytes.TrimRight(buf.Bytes(), "\n"))
	return err
}

// endJSONArray closes the array jsonElement opened, once; nothing when
// none was.
func (o *runOpts) endJSONArray(w io.Writer) error {
	a := &o.json
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.on || a.docs == 0 || a.closed {
		return nil
	}
	a.closed = true
	if _, err := fmt.Fprint(w, "\n]\n"); err != nil {
		return fmt.Errorf("print the result: %w", err)
	}
	return nil
}
