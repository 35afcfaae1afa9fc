package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rmqtorture/rmqtorture/redact"
	"io"
	"slices"
	"strings"

	"github.com/clipperhouse/displaywidth"
	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// listWidth is the width the default `list` fits in (columns): each
// scenario's line is cut there, with "…".
const listWidth = 100

func newList(g *globalOpts) *cobra.Command {
	var format outputFormat
	c := &cobra.Command{
		Use:   "list",
		Short: "List the scenarios in the scenario file, one line each",
		Long: `list prints each scenario's name and the first sentence of its description,
one line each, cut to 100 columns; -o wide prints the whole sentence and
-o json every scenario's name, description, modes, nodes, queue type and
fault actions. Without -f it lists the scenarios built into rmqtorture.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			f, err := g.load()
			if err != nil {
				return err
			}
			if format == outJSON {
				return writeJSON(c.OutOrStdout(), listJSON(f))
			}
			// The descriptions start in one column, after the longest name.
			nameW := 0
			for _, s := range f.Scenarios {
				nameW = max(nameW, displaywidth.String(s.Name))
			}
			for _, s := range f.Scenarios {
				line := fmt.Sprintf("%-*s %s", nameW, s.Name, groupPrefix(&s)+firstSentence(s.Description))
				if format != outWide {
					line = displaywidth.TruncateString(line, listWidth, "…")
				}
				fmt.Fprintln(c.OutOrStdout(), line)
			}
			return nil
		},
	}
	addFileFlag(c, g)
	addOutputFlag(c, &format, outWide, outJSON)
	return c
}

// firstSentence is a description on one line, up to the end of its first
// sentence.
func firstSentence(desc string) string {
	desc = strings.Join(strings.Fields(desc), " ")
	if i := strings.Index(desc, ". "); i > 0 {
		desc = desc[:i+1]
	}
	return desc
}

// listedScenario is one scenario in `list -o json`.
type listedScenario struct {
	Name        string   `json:"name"`
	Description string   `json:"description"` // on one line
	Modes       []string `json:"modes"`       // publishing modes, in run order
	Nodes       int      `json:"nodes"`       // 1: a single broker; 3 or 5: a cluster
	QueueType   string   `json:"queue_type"`  // quorum, classic or stream
	Faults      []string `json:"faults"`      // the fault steps' actions, in order; empty: no fault
	// Runs and Images: a group entry's scenarios and broker.images (absent
	// for a scenario; groups.go).
	Runs   []string `json:"runs,omitempty"`
	Images []string `json:"images,omitempty"`
}

func listJSON(f *scenario.File) []listedScenario {
	out := make([]listedScenario, 0, len(f.Scenarios))
	for _, s := range f.Scenarios {
		l := listedScenario{
			Name: s.Name, Description: strings.Join(strings.Fields(s.Description), " "),
			Modes: []string{}, Nodes: max(s.Broker.Nodes, 1), QueueType: string(s.Queue.Type), Faults: []string{},
		}
		for _, m := range s.Load.Modes {
			l.Modes = append(l.Modes, string(m))
		}
		for _, ft := range s.Faults {
			l.Faults = append(l.Faults, string(ft.Action))
		}
		l.Runs, l.Images = s.Runs, s.Broker.Images
		out = append(out, l)
	}
	return out
}

// writeJSON writes v to w as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newValidate(g *globalOpts) *cobra.Command {
	var format outputFormat
	c := &cobra.Command{
		Use:   "validate [scenario...]",
		Short: "Check the scenario file and print the resolved plan; touches nothing",
		Long: `validate reads the scenario file strictly (unknown keys are errors), reports
every problem with file:line:column and field path, and prints each scenario
(or the named ones) with every default filled in. It never talks to Docker or
a broker. Exit 0 when valid, 2 when not. Without -f it checks the scenarios
built into rmqtorture.

-o json prints, instead of the plan, whether the file is valid: its errors
(file, line, column, field, message) or the scenarios it checked.`,
		RunE: func(c *cobra.Command, args []string) error {
			f, err := g.load()
			if format == outJSON {
				return validateJSON(c.OutOrStdout(), g.file, f, err, args)
			}
			if err != nil {
				return err
			}
			out := f.Scenarios
			if len(args) > 0 {
				out = nil
				for _, name := range args {
					s, err := findScenario(f, g.file, name)
					if err != nil {
						return causeErr(CauseUnknownScenario, err)
					}
					out = append(out, *s)
				}
			}
			// A command step's ready URIs carry passwords: the plan
			// shows them masked (the copy only; the file is not run).
			out = slices.Clone(out)
			for i := range out {
				out[i].Faults = slices.Clone(out[i].Faults)
				for j := range out[i].Faults {
					ready := slices.Clone(out[i].Faults[j].Ready)
					for k, u := range ready {
						ready[k] = redact.URL(u)
					}
					out[i].Faults[j].Ready = ready
				}
			}
			enc := yaml.NewEncoder(c.OutOrStdout())
			enc.SetIndent(2)
			if err := enc.Encode(planOf(f.Version, out)); err != nil {
				return err
			}
			return enc.Close()
		},
	}
	addFileFlag(c, g)
	addOutputFlag(c, &format, outJSON)
	return c
}

// validation is `validate -o json`: one scenario file's verdict.
type validation struct {
	File      string            `json:"file"`
	OK        bool              `json:"ok"`
	Errors    []validationError `json:"errors"`    // empty when ok
	Scenarios []string          `json:"scenarios"` // the scenarios checked (all, or those named); empty unless ok
}

// validationError is one problem, where the file has it. Line, column and
// field are absent when the problem has no place (a file that cannot be read).
type validationError struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Field   string `json:"field,omitempty"` // the field's path, e.g. scenarios[0].load.window
	Message string `json:"message"`
}

// validateJSON prints the verdict on f (loaded from file, or loadErr) and
// the named scenarios as JSON, and returns the error that sets the exit
// code (2 when invalid).
func validateJSON(w io.Writer, file string, f *scenario.File, loadErr error, names []string) error {
	v := validation{File: file, Errors: []validationError{}, Scenarios: []string{}}
	err := loadErr
	if err == nil {
		if len(names) == 0 {
			for _, s := range f.Scenarios {
				v.Scenarios = append(v.Scenarios, s.Name)
			}
		}
		for _, name := range names {
			if _, ferr := findScenario(f, file, name); ferr != nil {
				v.Errors = append(v.Errors, validationError{File: file, Message: strings.TrimPrefix(ferr.Error(), file+": ")})
				err = causeErr(CauseUnknownScenario, ferr)
				continue
			}
			v.Scenarios = append(v.Scenarios, name)
		}
	} else {
		var fes scenario.Errors
		if errors.As(err, &fes) {
			for _, e := range fes {
				v.Errors = append(v.Errors, validationError{File: e.File, Line: e.Line, Column: e.Column, Field: e.Path, Message: e.Msg})
			}
		} else {
			v.Errors = append(v.Errors, validationError{File: file, Message: err.Error()})
		}
	}
	v.OK = err == nil
	if !v.OK {
		v.Scenarios = []string{}
	}
	if werr := writeJSON(w, v); werr != nil && err == nil {
		return werr
	}
	return err
}
