package cmd

import (
	"bytes"
	"fmt"
	"io"

	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// With -o json, run prints result.json on stdout: one scenario's result
// is the JSON object itself (as its result.json), several scenarios'
// results are one JSON array of those objects, in run order, so stdout
// always holds exactly one JSON document. The array is closed when run
// returns, also after an error or Ctrl-C; it holds the results written.

// jsonElement writes r as -o json prints it: the object alone, or, when
// several scenarios run, as the next element of the array (opening it
// before the first).
func (o *runOpts) jsonElement(w io.Writer, r *scenario.Result) error {
	if !o.jsonArray {
		return reports.JSON(w, r)
	}
	var buf bytes.Buffer
	if err := reports.JSON(&buf, r); err != nil {
		return err
	}
	sep := ",\n"
	if o.jsonDocs == 0 {
		sep = "[\n"
	}
	o.jsonDocs++
	_, err := fmt.Fprintf(w, "%s%s", sep, bytes.TrimRight(buf.Bytes(), "\n"))
	return err
}

// endJSONArray closes the array jsonElement opened; nothing when none was.
func (o *runOpts) endJSONArray(w io.Writer) error {
	if !o.jsonArray || o.jsonDocs == 0 {
		return nil
	}
	o.jsonDocs = 0
	if _, err := fmt.Fprint(w, "\n]\n"); err != nil {
		return fmt.Errorf("print the result: %w", err)
	}
	return nil
}
