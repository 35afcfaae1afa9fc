package cmd

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every command's --help fits helpWidth columns, and run's lists its flags
// under the headings of runFlagGroups, in their order, with no flag of its
// own left out of a group but --help.
func TestHelpGroupedWithin100Columns(t *testing.T) {
	root := NewRoot(new(bytes.Buffer), new(bytes.Buffer))
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Hidden {
			return
		}
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(slices.Clone(path), sub.Name()))
		}
	}
	walk(root, nil)
	heading := regexp.MustCompile(`^[A-Z][^:]*:$`)
	for _, path := range paths {
		var stdout, stderr bytes.Buffer
		if code := Execute(context.Background(), append(path, "--help"), &stdout, &stderr); code != ExitPass {
			t.Fatalf("%v --help: exit %d\n%s", path, code, stderr.String())
		}
		var headings []string
		for i, line := range strings.Split(stdout.String(), "\n") {
			if n := utf8.RuneCountInString(line); n > helpWidth {
				t.Errorf("rmqtorture %s --help, line %d: %d columns, more than %d: %q", strings.Join(path, " "), i+1, n, helpWidth, line)
			}
			if heading.MatchString(line) {
				headings = append(headings, line)
			}
		}
		if !slices.Equal(path, []string{"run"}) {
			continue
		}
		want := []string{"Usage:", "Examples:"}
		for _, g := range runFlagGroups {
			want = append(want, g.title+":")
		}
		want = append(want, "Other flags:", "Global Flags:")
		if got := slices.DeleteFunc(headings, func(h string) bool { return strings.HasPrefix(h, "Exit codes") }); !slices.Equal(got, want) {
			t.Errorf("run --help headings %q, want %q", got, want)
		}
		if !regexp.MustCompile(`(?s)\nLoad:\n.*  -x, --publishers int .*\n\nFaults:\n`).MatchString(stdout.String()) {
			t.Errorf("run --help lists -x, --publishers outside Load:\n%s", stdout.String())
		}
	}
	// Roots are built concurrently (a split run's parts in one test): the
	// help's template functions are registered with cobra once, so the race
	// detector finds nothing here.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { NewRoot(new(bytes.Buffer), new(bytes.Buffer)) })
	}
	wg.Wait()
	run, _, err := root.Find([]string{"run"})
	if err != nil {
		t.Fatal(err)
	}
	run.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && len(f.Annotations[groupAnnotation]) == 0 {
			t.Errorf("run's flag --%s is in no group of runFlagGroups (helpgroups.go)", f.Name)
		}
	})
}
