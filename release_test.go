package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The release's targets are stated twice: .goreleaser.yaml's goos × goarch
// (what a tag publishes) and scripts/release-build.sh's list (what .ci/run
// builds). They must agree, or CI checks builds the release does not make.
func TestReleaseTargets(t *testing.T) {
	data, err := os.ReadFile(".goreleaser.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Builds []struct {
			Goos   []string `yaml:"goos"`
			Goarch []string `yaml:"goarch"`
		} `yaml:"builds"`
	}
	if err := yaml.Unmarshal(data, &cfg); err != nil || len(cfg.Builds) != 1 {
		t.Fatalf(".goreleaser.yaml: %v, %d builds; want one", err, len(cfg.Builds))
	}
	var release []string
	for _, goos := range cfg.Builds[0].Goos {
		for _, goarch := range cfg.Builds[0].Goarch {
			release = append(release, goos+"/"+goarch)
		}
	}
	script, err := os.ReadFile("scripts/release-build.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^targets=\(([^)]*)\)$`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/release-build.sh: no targets=(…) line")
	}
	built := strings.Fields(string(m[1]))
	slices.Sort(release)
	slices.Sort(built)
	if len(release) != 6 || !slices.Equal(release, built) {
		t.Fatalf(".goreleaser.yaml releases %q, scripts/release-build.sh builds %q: want the same six", release, built)
	}
}
