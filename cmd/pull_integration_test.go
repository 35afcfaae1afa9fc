package cmd

// The pull path against a real registry: Debian's docker-registry package
// (distribution 2.x) serving on 127.0.0.1, one of the project's images
// pushed to it and untagged locally, and a run with --image naming it.
// -short skips it; so does a machine without /usr/bin/docker-registry
// (.ci/run installs the package).

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"

	"github.com/rmqtorture/rmqtorture/broker/docker"
)

const registryBin = "/usr/bin/docker-registry"

// startRegistry serves a registry on 127.0.0.1 from a temporary folder
// until the test ends and returns its host:port.
func startRegistry(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(registryBin); err != nil {
		t.Skipf("%s is absent (Debian: apt-get install -y docker-registry; .ci/run installs it): %v", registryBin, err)
	}
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freeLocalPort(t))
	conf := filepath.Join(dir, "config.yml")
	body := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\n  delete:\n    enabled: true\nhttp:\n  addr: %s\n", filepath.Join(dir, "data"), addr)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(registryBin, "serve", conf)
	var logb strings.Builder
	cmd.Stdout, cmd.Stderr = &logb, &logb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return addr
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry on %s not serving after 15 s (last: %v); its log:\n%s", addr, err, logb.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// drain reads an engine progress stream to its end and returns the
// error it carries, if any.
func drain(rc io.ReadCloser) error {
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.Error != nil {
			return m.Error
		}
	}
}

// padBytes is the size of the layer the pushed image adds to the broker
// image: random, so it compresses to about itself (3.0 MB).
const padBytes = 3_000_000

// buildContext is an image build context: a tar of files (name → body),
// each a regular file of mode.
func buildContext(t *testing.T, mode int64, files map[string][]byte) *bytes.Buffer {
	t.Helper()
	var tarball bytes.Buffer
	tw := tar.NewWriter(&tarball)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: mode, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &tarball
}

// pushPadded builds ref from src plus one layer of padBytes random bytes
// (a layer the engine has nowhere else, so pulling ref downloads it),
// pushes it to its registry and removes it from the engine, layer and
// all; whatever of ref is in the engine when the test ends is removed.
func pushPadded(t *testing.T, cli *client.Client, src, ref string) {
	t.Helper()
	ctx := context.Background()
	pad := make([]byte, padBytes)
	rnd := rand.New(rand.NewChaCha8([32]byte{}))
	for i := range pad {
		pad[i] = byte(rnd.Uint32())
	}
	tarball := buildContext(t, 0o644, map[string][]byte{"Dockerfile": []byte("FROM " + src + "\nCOPY pad /var/tmp/rmqt-pull-pad\n"), "pad": pad})
	resp, err := cli.ImageBuild(ctx, tarball, build.ImageBuildOptions{Tags: []string{ref}, Remove: true, ForceRemove: true, SuppressOutput: true})
	if err != nil {
		t.Fatal(err)
	}
	removeImage := func() { _, _ = cli.ImageRemove(context.Background(), ref, image.RemoveOptions{PruneChildren: true}) }
	t.Cleanup(removeImage)
	if err := drain(resp.Body); err != nil {
		t.Fatalf("build %s: %v", ref, err)
	}
	// The engine wants an X-Registry-Auth header on push; the registry
	// asks for no credentials.
	auth, err := registry.EncodeAuthConfig(registry.AuthConfig{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := cli.ImagePush(ctx, ref, image.PushOptions{RegistryAuth: auth})
	if err != nil {
		t.Fatal(err)
	}
	if err := drain(rc); err != nil {
		t.Fatalf("push %s: %v", ref, err)
	}
	removeImage()
	if _, err := cli.ImageInspect(ctx, ref); !client.IsErrNotFound(err) {
		t.Fatalf("%s still in the engine after removing it (err %v)", ref, err)
	}
}

// TestRunPullsMissingImage: a run whose --image the engine lacks pulls it
// from the registry it names, says so on stderr, and runs on it.
func TestRunPullsMissingImage(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs Docker")
	}
	addr := startRegistry(t)
	cli := dockerClient(t)
	ref := addr + "/" + brokerImage()
	pushPadded(t, cli, brokerImage(), ref)

	code, stdout, stderr := runCLI(t, "run", "pulled", "-f", "testdata/pulled.yaml", "--image", ref, "--out", t.TempDir(), "--log-format", "text")
	if code != ExitPass {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	// Not on a terminal, the pull is two log lines (a terminal shows its
	// progress line instead).
	for _, want := range []string{`msg="pulling broker image" .*image=` + regexp.QuoteMeta(ref), `msg="broker image pulled" .*image=` + regexp.QuoteMeta(ref) + ` downloaded="3.0 MB"`} {
		if !regexp.MustCompile(want).MatchString(stderr) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr)
		}
	}
	if _, err := cli.ImageInspect(context.Background(), ref); err != nil {
		t.Errorf("%s not in the engine after the run: %v", ref, err)
	}
	r := readResult(t, stdout)
	if r.Image != ref || len(r.Modes) != 1 || r.Modes[0].Delivered != 500 || r.Modes[0].Confirmed != 500 || r.Modes[0].Lost != 0 {
		t.Errorf("image %q, modes %+v; want %s and 500 of 500 delivered", r.Image, r.Modes, ref)
	}

	// The progress lines of a pull, from the engine's real stream: the
	// base layer is there already and counts for nothing; the padding's
	// 3.0 MB (compressed) are counted up to their total.
	if _, err := cli.ImageRemove(context.Background(), ref, image.RemoveOptions{PruneChildren: true}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	pulled, err := docker.EnsureImage(context.Background(), cli, slog.New(slog.DiscardHandler), ref, func(l string) { lines = append(lines, l) })
	if !pulled || err != nil || len(lines) < 3 || lines[0] != "pulling "+ref || lines[len(lines)-1] != "pulling "+ref+": 3.0 MB of 3.0 MB" {
		t.Errorf("pulled %v, err %v, progress lines:\n%s", pulled, err, strings.Join(lines, "\n"))
	}
	t.Logf("progress lines of the pull: %q", lines)
	for _, l := range lines[1:] {
		if l != "pulling "+ref && !regexp.MustCompile(`^pulling `+regexp.QuoteMeta(ref)+`: [0-9]\.[0-9] MB of 3\.0 MB(, extracting)?$`).MatchString(l) {
			t.Errorf("progress line %q", l)
		}
	}

	// The project's image missing (a suite no engine has): the official
	// image of its RabbitMQ version, from --official-registry, runs
	// instead, and the result names it (the project's 4.0 image stands in
	// for the official rabbitmq:4.0 here; TestOfficialImageLayout runs the
	// official layout).
	official := addr + "/rabbitmq:4.0"
	pushPadded(t, cli, brokerImage(), official)
	code, stdout, stderr = runCLI(t, "run", "pulled", "-f", "testdata/pulled.yaml", "--image", "rmqtorture/rabbitmq:4.0-nosuchsuite", "--official-registry", addr, "--out", t.TempDir(), "--log-format", "text")
	if code != ExitPass {
		t.Fatalf("fallback: exit %d\nstderr:\n%s", code, stderr)
	}
	warn := regexp.QuoteMeta(`level=WARN msg="the project's broker image is not in the Docker Engine (scripts/build-broker-image.sh builds it from Debian's packages, no registry needed); using the official image of its RabbitMQ version"`) +
		` scenario=pulled run=[0-9a-f]{8} ` + regexp.QuoteMeta("image=rmqtorture/rabbitmq:4.0-nosuchsuite official="+official) + "\n"
	if !regexp.MustCompile(warn).MatchString(stderr) {
		t.Errorf("fallback: stderr lacks %s:\n%s", warn, stderr)
	}
	if r := readResult(t, stdout); r.Image != official || r.Modes[0].Delivered != 500 {
		t.Errorf("fallback: image %q, delivered %d; want %s, 500", r.Image, r.Modes[0].Delivered, official)
	}

	// A registry that does not have the image: its answer, and the
	// missing-image message kept, exit 1 (CauseImageMissing).
	absent := addr + "/rmqtorture/absent:0"
	code, _, stderr = runCLI(t, "run", "pulled", "-f", "testdata/pulled.yaml", "--image", absent, "--out", t.TempDir())
	for _, want := range []string{
		`"` + absent + `" is not in the local Docker Engine; build it with scripts/build-broker-image.sh`,
		`pulling "` + absent + `" failed: `,
		"manifest unknown",
	} {
		if code != ExitError || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
}
