package cmd

// Broker versions side by side (issue 13): --images (or broker.images, or a
// group entry such as upgrade-check) runs each scenario once per image, an
// ordinary run each with its own folder and result.json, then writes one
// versions report: versions-<UTC>-<id>/versions.md and versions.json under
// --out, and prints it on stdout in the -o format.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/reports"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// addImagesFlag adds --images to run.
func (o *runOpts) addImagesFlag(c *cobra.Command) {
	c.Flags().StringSliceVar(&o.images, "images", nil, "run every scenario on each of these broker images, comma-separated, in order, and write one versions report (versions.md, versions.json) with a column per version (overrides broker.images; not with --image, --container, --containers or --uri)")
}

// planned is one run to make: a scenario (a group's member, or a named
// scenario) on one image; image "" is the scenario's own broker.image.
type planned struct {
	scenario *scenario.Scenario
	image    string
}

// expandNames resolves the scenario names run was given (every scenario of
// the file with --all, which skips group entries: the scenarios a group
// names are entries of the file too, so each runs once) into the runs to
// make, and whether they make a versions report: --images was given, a
// group was named, or a scenario sets broker.images. groups are the group
// entries named.
func (o *runOpts) expandNames(c *cobra.Command, f *scenario.File, file string, names []string) (runs []planned, versions bool, groups []string, err error) {
	if err := o.checkImages(c); err != nil {
		return nil, false, nil, usageErr(err)
	}
	flagImages := c.Flags().Changed("images")
	if o.all {
		names = nil
		for _, sc := range f.Scenarios {
			if !sc.IsGroup() {
				names = append(names, sc.Name)
			}
		}
	}
	versions = flagImages
	seen := map[[2]string]bool{}
	for _, name := range names {
		s, err := findScenario(f, file, name)
		if err != nil {
			return nil, false, nil, causeErr(CauseUnknownScenario, err)
		}
		members, images := []string{name}, s.Broker.Images
		if s.IsGroup() {
			members, versions = s.Runs, true
			groups = append(groups, name)
		}
		for _, m := range members {
			ms, err := findScenario(f, file, m)
			if err != nil {
				return nil, false, nil, causeErr(CauseUnknownScenario, err)
			}
			imgs := images
			if s.IsGroup() && len(imgs) == 0 {
				imgs = ms.Broker.Images
			}
			switch {
			case flagImages:
				imgs = o.images
			case c.Flags().Changed("image"):
				imgs = nil // --image names the one image to run on
			}
			if len(imgs) > 0 {
				versions = true
				if named := o.brokerElsewhere(); named != "" {
					flag := strings.Fields(named)[0]
					instead := "run without " + flag
					if flag != "--uri" {
						instead += ", or with --image"
					}
					return nil, false, nil, usageErr(fmt.Errorf("%s: scenario %q runs on broker.images (%s), broker containers rmqtorture creates from each image; %s names one running broker (%s)",
						named, ms.Name, strings.Join(imgs, ", "), flag, instead))
				}
			}
			if len(imgs) == 0 {
				imgs = []string{""}
			}
			for _, img := range imgs {
				// One scenario on one image runs once, however it was
				// named: by a group, by itself, on its own image.
				same := img
				if same == "" {
					same = ms.Broker.Image
				}
				if ref, err := scenario.ImageRef(same); err == nil {
					same = ref
				}
				if k := [2]string{m, same}; !seen[k] {
					seen[k] = true
					runs = append(runs, planned{scenario: ms, image: img})
				}
			}
		}
	}
	return runs, versions, groups, nil
}

// brokerElsewhere is the flag and value that name a broker rmqtorture
// does not create (--container, --containers, --uri), "" when none does.
func (o *runOpts) brokerElsewhere() string {
	if o.uri != "" {
		return "--uri"
	}
	return o.namedContainers()
}

// checkImages checks --images on its own and beside the flags that name
// the broker otherwise, and trims its names.
func (o *runOpts) checkImages(c *cobra.Command) error {
	fl := c.Flags()
	if !fl.Changed("images") {
		return nil
	}
	switch {
	case fl.Changed("uri"):
		return errors.New("--images and --uri: --uri names a running broker that rmqtorture reaches over AMQP only, and --images runs broker containers rmqtorture creates from each image: give one")
	case fl.Changed("image"):
		return errors.New("--images and --image both name the broker's image: give one (--images runs every scenario on each image it lists)")
	case fl.Changed("container"), fl.Changed("containers"):
		name := "--container"
		if fl.Changed("containers") {
			name = "--containers"
		}
		return fmt.Errorf("--images and %s: --images runs every scenario on broker containers rmqtorture creates from each image, and %s names running ones: give one", name, name)
	}
	if len(o.images) == 0 {
		return errors.New("--images needs the broker images to run on, comma-separated, e.g. --images rmqtorture/rabbitmq:4.0-trixie,rmqtorture/rabbitmq:4.3-forky")
	}
	seen := map[string]string{}
	for i, img := range o.images {
		img = strings.TrimSpace(img)
		if img == "" {
			return fmt.Errorf("--images: image %d of %q is empty", i+1, strings.Join(o.images, ","))
		}
		ref, err := scenario.ImageRef(img)
		if err != nil {
			return fmt.Errorf("--images: %w", err)
		}
		if first, dup := seen[ref]; dup {
			if first == img {
				return fmt.Errorf("--images: %q named twice: each image runs once", img)
			}
			return fmt.Errorf("--images: %q and %q name the same image: each image runs once", first, img)
		}
		seen[ref] = img
		o.images[i] = img
	}
	return nil
}

// planScenario is the scenario of one run, before apply: a copy of s on
// image (its own broker.image when image is ""), without broker.images.
func planScenario(s *scenario.Scenario, image string) scenario.Scenario {
	sc := *s
	sc.Load.Modes = slices.Clone(s.Load.Modes)
	sc.Broker.Images = nil
	if image != "" {
		sc.Broker.Image = image
	}
	return sc
}

// versionsRun collects the runs of one invocation into its versions
// report; finish writes the report once, whoever comes first: the run
// loop's end, or a second Ctrl-C's partial report (interrupt.go).
type versionsRun struct {
	o         *runOpts
	c         *cobra.Command
	in        reports.VersionsInput
	dir       string
	mu        sync.Mutex
	finished  bool
	interrupt bool
	// verdict is the versions report's, once finish built it.
	verdict scenario.Verdict
}

// newVersionsRun starts the versions report of plans (run in this order).
func (o *runOpts) newVersionsRun(c *cobra.Command, plans []scenario.Scenario, groups []string) *versionsRun {
	v := &versionsRun{o: o, c: c, in: reports.VersionsInput{Tool: toolVersion(), Command: "rmqtorture " + strings.Join(os.Args[1:], " "),
		Group: strings.Join(groups, ", "), StartedAt: time.Now()}}
	for _, p := range plans {
		if !slices.Contains(v.in.Scenarios, p.Name) {
			v.in.Scenarios = append(v.in.Scenarios, p.Name)
		}
		if !slices.Contains(v.in.Images, p.Broker.Image) {
			v.in.Images = append(v.in.Images, p.Broker.Image)
		}
	}
	if c.Flags().Changed("images") {
		v.in.Images = o.images // the order given, also for images no run reached
	}
	v.dir = filepath.Join(o.out, fmt.Sprintf("versions-%s-%s", v.in.StartedAt.UTC().Format("20060102T150405Z"), newRunID()))
	return v
}

// add records one run's result as written into dir.
func (v *versionsRun) add(dir string, res *scenario.Result) {
	v.mu.Lock()
	defer v.mu.Unlock()
	cp := *res
	v.in.Runs = append(v.in.Runs, reports.VersionsRunInput{Image: res.Image, Dir: dir, Result: &cp})
	if res.Interrupted {
		v.interrupt = true
	}
}

// writeRun is write's versions-report form: one run's result.json and
// report.md into dir, recorded for the report; on stderr a line with its
// verdict and the paths (stdout holds the versions report alone).
func (o *runOpts) writeRun(c *cobra.Command, dir string, res *scenario.Result) error {
	if err := o.writeReport(dir, res); err != nil {
		return err
	}
	if err := o.scenarioEnded(res); err != nil {
		return err
	}
	o.versions.add(dir, res)
	_, err := fmt.Fprintf(c.ErrOrStderr(), "%s on %s: %s\nreport: %s\nresult: %s\n", res.Scenario, res.BrokerVersionOrImage(),
		strings.ToUpper(string(res.Verdict.Status)), filepath.Join(dir, "report.md"), filepath.Join(dir, "result.json"))
	return errors.Join(err, annotate(c.ErrOrStderr(), res))
}

// finish writes the versions report (once): versions.json and versions.md
// into its folder, the -o rendering on stdout, the paths (on stdout, or on
// stderr with -o json or -o markdown) and, with --summary-file, versions.md
// appended to it. interrupted marks it as holding only what ran.
func (v *versionsRun) finish(interrupted bool) error {
	if v == nil {
		return nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.finished {
		return nil
	}
	v.finished = true
	in := v.in
	in.Interrupted = interrupted || v.interrupt
	rep := reports.BuildVersions(in)
	v.verdict = rep.Verdict
	out, paths := v.c.OutOrStdout(), v.c.OutOrStdout()
	render := reports.VersionsSummary
	switch v.o.output {
	case outWide:
		render = reports.VersionsWide
	case outJSON:
		render, paths = reports.VersionsJSON, v.c.ErrOrStderr()
	case outMarkdown:
		render, paths = reports.VersionsMarkdown, v.c.ErrOrStderr()
	}
	v.o.prog.hide()
	var errs []error
	if v.o.printed > 0 && v.o.output != outJSON {
		fmt.Fprintln(out)
	}
	if err := render(out, rep); err != nil {
		errs = append(errs, fmt.Errorf("print the versions report: %w", err))
	}
	if err := os.MkdirAll(v.dir, 0o755); err != nil {
		return errors.Join(append(errs, fmt.Errorf("create the versions report folder: %w", err))...)
	}
	md := filepath.Join(v.dir, "versions.md")
	js := filepath.Join(v.dir, "versions.json")
	if err := writeAtomic(js, func(f *os.File) error { return reports.VersionsJSON(f, rep) }); err != nil {
		errs = append(errs, fmt.Errorf("write versions.json: %w", err))
	}
	if err := writeAtomic(md, func(f *os.File) error { return reports.VersionsMarkdown(f, rep) }); err != nil {
		errs = append(errs, fmt.Errorf("write versions.md: %w", err))
	}
	if v.o.summaryFile != "" {
		if err := appendVersions(v.o.summaryFile, rep); err != nil {
			errs = append(errs, err)
		}
	}
	fmt.Fprintf(paths, "versions report: %s\nversions result: %s\n", md, js)
	return errors.Join(errs...)
}

// appendVersions appends versions.md to path (--summary-file).
func appendVersions(path string, rep *reports.Versions) error {
	return appendMarkdown(path, func(w io.Writer) error { return reports.VersionsMarkdown(w, rep) })
}

// groupPrefix is what `list` puts before a group entry's description.
func groupPrefix(s *scenario.Scenario) string {
	if !s.IsGroup() {
		return ""
	}
	var on string
	switch n := len(s.Broker.Images); n {
	case 0:
		on = "each scenario's image"
	case 1:
		on = "1 image"
	default:
		on = plural(n, "image")
	}
	return fmt.Sprintf("[group: %s on %s] ", plural(len(s.Runs), "scenario"), on)
}

// groupPlan is a group entry as `validate` prints it: only the fields a
// group has.
type groupPlan struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	Broker      struct {
		Images []string `yaml:"images,omitempty"`
	} `yaml:"broker,omitempty"`
	Runs []string `yaml:"runs"`
}

// planOf is the document `validate` prints: the scenarios with every
// default filled in, group entries with their own fields only.
func planOf(version int, ss []scenario.Scenario) any {
	out := make([]any, len(ss))
	for i := range ss {
		if !ss[i].IsGroup() {
			out[i] = ss[i]
			continue
		}
		g := groupPlan{Name: ss[i].Name, Description: ss[i].Description, Runs: ss[i].Runs}
		g.Broker.Images = ss[i].Broker.Images
		out[i] = g
	}
	return struct {
		Version   int   `yaml:"version"`
		Scenarios []any `yaml:"scenarios"`
	}{version, out}
}

// outcome is the run's error once the versions report is written: err (the
// runs' worst cause) unless the report failed on a behaviour no version
// scope states while every run passed its own expectations: then a failed
// verdict (exit 1), which also outranks an inconclusive or interrupted
// run (a measured difference is a finding); an error is kept as it is.
func (v *versionsRun) outcome(err error) error {
	if v == nil || v.verdict.Status != scenario.Fail {
		return err
	}
	var ee *exitError
	if err == nil || (errors.As(err, &ee) && slices.Contains([]Cause{CauseInconclusive, CauseBrokerNotReady, CauseInterrupted}, ee.cause)) {
		return causeErr(CauseVerdictFail, errors.New("verdict: fail: a behaviour changed between broker versions that no version scope states (see What changed)"))
	}
	return err
}
