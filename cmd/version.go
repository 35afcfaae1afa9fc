package cmd

import (
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/rmqtorture/rmqtorture/cmd.Version=v1.2.3";
// without it the module version from the build info is used.
var Version = ""

// amqpModule is the AMQP 0-9-1 client library whose version is reported.
const amqpModule = "github.com/rabbitmq/amqp091-go"

// toolVersion is rmqtorture's version: Version, else the module version
// the go command recorded (a tag or pseudo-version with go install
// module@version), else "dev".
func toolVersion() string {
	bi, ok := debug.ReadBuildInfo()
	return moduleVersion(bi, ok)
}

func moduleVersion(bi *debug.BuildInfo, ok bool) string {
	if Version != "" {
		return Version
	}
	if ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// clientVersion names the AMQP client library and its version from the build.
func clientVersion() string {
	bi, ok := debug.ReadBuildInfo()
	return clientVersionOf(bi, ok)
}

func clientVersionOf(bi *debug.BuildInfo, ok bool) string {
	if ok {
		for _, d := range bi.Deps {
			if d.Path == amqpModule {
				if d.Replace != nil && d.Replace.Version != "" {
					return "amqp091-go " + d.Replace.Version
				}
				return "amqp091-go " + d.Version
			}
		}
	}
	return "amqp091-go"
}

// versionText is what --version and `version` print: rmqtorture's version,
// the commit it was built from and that commit's time (vcs.revision,
// vcs.time, vcs.modified, which go build records from a git checkout),
// the AMQP client library's version and the Go version.
func versionText(bi *debug.BuildInfo, ok bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rmqtorture %s\n", moduleVersion(bi, ok))
	settings := map[string]string{}
	goVersion := "unknown"
	if ok {
		for _, s := range bi.Settings {
			settings[s.Key] = s.Value
		}
		goVersion = bi.GoVersion
	}
	commit := settings["vcs.revision"]
	switch {
	case commit == "":
		commit = "unknown (built without version control information)"
	case settings["vcs.modified"] == "true":
		commit += " (with uncommitted changes)"
	}
	fmt.Fprintf(&b, "  commit  %s\n", commit)
	if t := settings["vcs.time"]; t != "" {
		fmt.Fprintf(&b, "  date    %s\n", t)
	}
	fmt.Fprintf(&b, "  client  %s\n", clientVersionOf(bi, ok))
	fmt.Fprintf(&b, "  go      %s\n", goVersion)
	return b.String()
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print rmqtorture's version, commit and build date, and its AMQP client library",
		Long: `version (or --version) prints rmqtorture's module version, the commit it was
built from and that commit's date (from the Go build information), the
version of the AMQP client library (amqp091-go) and of Go.`,
		Args: noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			fmt.Fprint(c.OutOrStdout(), versionText(debug.ReadBuildInfo()))
			return nil
		},
	}
}
