package cmd

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// With -o json or -o markdown stdout holds the document alone, so the
// verdict and every reason reach stderr too, before the paths; the
// default output prints them on stdout only (the headline has them).
func TestVerdictOnStderrWithADocumentOnStdout(t *testing.T) {
	for _, out := range []outputFormat{outJSON, outMarkdown, outDefault} {
		res, err := loadResult(storedResult)
		if err != nil {
			t.Fatal(err)
		}
		res.Verdict = scenario.Verdict{Status: scenario.Fail, Reasons: []string{"3 confirmed messages lost: basic.ack received, never delivered", "2 unexpected deliveries"}}
		o := &runOpts{output: out}
		c := &cobra.Command{}
		var stdout, stderr bytes.Buffer
		c.SetOut(&stdout)
		c.SetErr(&stderr)
		if err := o.write(c, slog.New(slog.DiscardHandler), filepath.Join(t.TempDir(), "run"), res); err != nil {
			t.Fatal(err)
		}
		want := "verdict: " + res.Scenario + ": FAIL: 3 confirmed messages lost: basic.ack received, never delivered; 2 unexpected deliveries\nreport: "
		if got := strings.Contains(stderr.String(), want); got != (out != outDefault) || strings.Contains(stdout.String(), "verdict: "+res.Scenario+": FAIL") {
			t.Errorf("-o %q: stderr %q, stdout has the line: %v", out, stderr.String(), strings.Contains(stdout.String(), "verdict: "+res.Scenario))
		}
	}
}
