package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/broker/docker"
	"github.com/rmqtorture/rmqtorture/redact"
)

func newCleanup(_ *globalOpts) *cobra.Command {
	var dry bool
	var scope docker.Scope
	c := &cobra.Command{
		Use:   "cleanup",
		Short: "Remove what dead rmqtorture processes left behind; restore containers they changed",
		Long: `cleanup removes the containers, networks and volumes rmqtorture labelled
(org.rmqtorture.managed=true) that a run could not remove itself, and restores
a container named with --container that a fault left stopped, paused,
disconnected or alarmed when its rmqtorture process died (recorded in
$XDG_STATE_HOME/rmqtorture, else ~/.local/state/rmqtorture).

By default it removes only what this user created on this host with an
rmqtorture process that is gone (no process with the recorded pid, or one
that started at another time), and never one kept with --keep. --run ID
removes that run's, kept or not; --all every rmqtorture container, network
and volume of any user or host but kept ones. Whatever the scope, one whose
rmqtorture process still runs is skipped unless --force. It never touches
anything without the label. It also unmounts and removes the lazy filesystems
(broker.filesystem: lazy, under $TMPDIR/rmqtorture-lazyfs) of rmqtorture
processes that are gone. A run does the default cleanup before it starts.`,
		Example: `  rmqtorture cleanup --dry-run
  rmqtorture cleanup --run 3f2a9c01
  rmqtorture cleanup --all`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				// Most likely a run id given without its flag.
				return usageErr(fmt.Errorf("cleanup takes no arguments, got %q; to remove one run's containers: rmqtorture cleanup --run %s", args[0], args[0]))
			}
			return noArgs(c, args)
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if scope.All && scope.Run != "" {
				return usageErr(errors.New("--run and --all choose different scopes: give one"))
			}
			// An empty --run would widen the sweep to the default scope,
			// and a pattern or a path is no run's id.
			if c.Flags().Changed("run") && !runIDPattern.MatchString(scope.Run) {
				return usageErr(fmt.Errorf("--run %q: a run id is 1–40 letters, digits, - or _, as in result.json's run_id (the last part of a run folder's name)", scope.Run))
			}
			ctx := c.Context()
			if err := checkDockerEnv(); err != nil {
				return usageErr(err)
			}
			cli, err := docker.Connect(ctx)
			if err != nil {
				return opErr(err)
			}
			defer cli.Close()
			out := c.OutOrStdout()
			s := sweeper{cli: cli, scope: scope, dry: dry,
				did:  func(msg string) { fmt.Fprintln(out, msg) },
				skip: func(msg string) { fmt.Fprintln(out, msg) }}
			n, err := s.sweep(ctx)
			if err != nil {
				return opErr(err)
			}
			if n.foreign > 0 {
				fmt.Fprintf(out, "left alone: %d labelled by another user, another host or an older rmqtorture (--all or --run ID removes them)\n", n.foreign)
			}
			if n.done == 0 && n.skipped == 0 {
				fmt.Fprintln(out, "nothing to clean up")
			}
			return nil
		},
	}
	fl := c.Flags()
	fl.BoolVar(&dry, "dry-run", false, "list what would be removed or restored, change nothing")
	fl.StringVar(&scope.Run, "run", "", "remove this run's containers, networks and volumes (its id, as in result.json's run_id), --keep ones included")
	fl.BoolVar(&scope.All, "all", false, "remove every rmqtorture container, network and volume (any user, any host), except --keep ones")
	fl.BoolVar(&scope.Force, "force", false, "also remove those whose rmqtorture process is still running")
	return c
}

// sweeper removes the labelled resources its scope takes (containers, then
// networks, then volumes) and applies the restores that dead rmqtorture
// processes left in the state folder. did is told each thing done (or, with
// dry, that would be done), skip each thing of this user's left in place.
type sweeper struct {
	cli       *docker.Engine
	scope     docker.Scope
	dry       bool
	did, skip func(string)
}

// swept counts what a sweep did, skipped, and left as someone else's.
type swept struct{ done, skipped, foreign int }

func (s sweeper) sweep(ctx context.Context) (swept, error) {
	var n swept
	list, err := docker.Labelled(ctx, s.cli)
	if err != nil {
		return n, err
	}
	var errs []error
	for _, r := range list {
		what := fmt.Sprintf("%s %s (run %s", r.Kind, r.Name, r.Run)
		if r.State != "" {
			what += ", " + r.State
		}
		what += ")"
		if why, foreign := s.scope.Skip(r); why != "" {
			if foreign {
				if s.scope.Run == "" {
					n.foreign++
				}
				continue
			}
			n.skipped++
			s.skip("skipping " + what + ": " + why)
			continue
		}
		n.done++
		if s.dry {
			s.did("would remove " + what + gone(r))
			continue
		}
		if err := docker.RemoveResource(ctx, s.cli, r); err != nil {
			errs = append(errs, err)
			continue
		}
		s.did("removed " + what + gone(r))
	}
	ln, err := s.lazyMounts()
	errs = append(errs, err)
	n.done += ln.done
	n.skipped += ln.skipped
	rn, err := s.restore(ctx)
	n.done += rn.done
	n.skipped += rn.skipped
	return n, errors.Join(append(errs, err)...)
}

// lazyMounts unmounts and removes the lazy filesystems (broker.filesystem:
// lazy) whose rmqtorture process is gone, after their containers (sweep
// removes those first); --force takes those of a live process too, --run
// only that run's.
func (s sweeper) lazyMounts() (swept, error) {
	var n swept
	list, err := docker.LazyLeftovers()
	if err != nil {
		return n, err
	}
	var errs []error
	for _, l := range list {
		if s.scope.Run != "" && l.Container != "rmqt-"+s.scope.Run && !strings.HasPrefix(l.Container, "rmqt-"+s.scope.Run+"-") {
			continue
		}
		what := fmt.Sprintf("lazy filesystem %s (container %s", l.Dir, l.Container)
		if l.Mounted {
			what += ", mounted"
		}
		what += ")"
		if l.Alive() && !s.scope.Force {
			n.skipped++
			s.skip(fmt.Sprintf("skipping %s: its rmqtorture process %d is still running (--force removes it anyway)", what, l.PID))
			continue
		}
		n.done++
		if s.dry {
			s.did("would unmount and remove " + what)
			continue
		}
		if err := l.Remove(); err != nil {
			errs = append(errs, err)
			continue
		}
		s.did(fmt.Sprintf("unmounted and removed %s: its rmqtorture process %d is gone", what, l.PID))
	}
	return n, errors.Join(errs...)
}

// gone says why a removed resource was a leftover.
func gone(r docker.Resource) string {
	if r.Known && !r.Owner.Alive() && r.Owner.Host == docker.Self().Host {
		return fmt.Sprintf(": its rmqtorture process %d is gone", r.Owner.PID)
	}
	return ""
}

// restore applies every restore in the state folder whose rmqtorture
// process is gone (never under a live one: it is in the middle of a fault).
func (s sweeper) restore(ctx context.Context) (swept, error) {
	var n swept
	list, err := docker.PendingRestores()
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, r := range list {
		what := fmt.Sprintf("container %s, which rmqtorture did not create, left changed by rmqtorture process %d", r.Name, r.Owner.PID)
		if r.Owner.Alive() {
			n.skipped++
			s.skip("skipping " + what + ": that process is still running")
			continue
		}
		n.done++
		if s.dry {
			s.did(fmt.Sprintf("would restore %s: %s", what, strings.Join(r.Steps(), ", ")))
			continue
		}
		done, err := r.Apply(ctx, s.cli)
		switch {
		case errors.Is(err, docker.ErrRestoreBusy):
			s.skip("skipping " + what + ": " + err.Error())
		case err != nil:
			errs = append(errs, fmt.Errorf("%w (state file %s kept for the next try)", err, r.File))
		case len(done) == 0:
			s.did(fmt.Sprintf("restored %s: nothing left to undo (%s)", what, r.File))
		default:
			s.did(fmt.Sprintf("restored %s: %s", what, strings.Join(done, ", ")))
		}
	}
	return n, errors.Join(errs...)
}

// sweepBeforeRun is the default cleanup a run does before it starts: what
// dead rmqtorture processes of this user on this host left behind goes,
// each removal and restore logged; a failure is logged, not fatal.
func sweepBeforeRun(ctx context.Context, log *slog.Logger, cli *docker.Engine) {
	s := sweeper{cli: cli,
		did:  func(msg string) { log.Info("leftover of an earlier run: " + msg) },
		skip: func(string) {}}
	if _, err := s.sweep(ctx); err != nil {
		log.Warn("clean up leftovers of earlier runs (`rmqtorture cleanup` retries)", "err", err)
	}
}

// Abort is the last act of a process told to exit at once (a second
// Ctrl-C): within `within` it force-removes the containers this process
// created and has not removed (not --keep ones), and says on stderr what it
// leaves: a container it could not remove, a container it did not create
// that a fault left changed (the next run or cleanup restores it).
func Abort(stderr io.Writer, within time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	removed, errs := docker.RemoveCreated(ctx)
	for _, name := range removed {
		fmt.Fprintf(stderr, "rmqtorture: removed container %s\n", name)
	}
	for _, err := range errs {
		fmt.Fprintf(stderr, "rmqtorture: %s; `rmqtorture cleanup` removes it\n", redact.Text(err.Error()))
	}
	for _, a := range docker.AlteredAttached() {
		fmt.Fprintf(stderr, "rmqtorture: left changed: %s; the next `rmqtorture run` or `rmqtorture cleanup` restores it\n", a)
	}
}
