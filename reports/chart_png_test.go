package reports

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// seriesFixture is a real kill-mid-burst run of 4,000 orders with its
// series (rmqtorture run kill-mid-burst --messages 4000): fire-and-forget
// sent 4,000 and 401 were delivered.
const seriesFixture = "testdata/kill-mid-burst-series.result.json"

// renderPNG renders the chart of mode mode of the fixture to SVG, converts
// it to PNG with rsvg-convert at twice the size, and decodes it. Without
// rsvg-convert (Debian: librsvg2-bin) the test is skipped in -short mode
// and fails otherwise.
func renderPNG(t *testing.T, mode scenario.Mode) image.Image {
	t.Helper()
	bin, err := exec.LookPath("rsvg-convert")
	if err != nil {
		if testing.Short() {
			t.Skip("rsvg-convert not found (Debian: apt-get install -y librsvg2-bin): the chart's pixels are not checked in -short mode")
		}
		t.Fatal("rsvg-convert not found: install it (Debian: apt-get install -y librsvg2-bin) to check the chart's pixels")
	}
	data, err := os.ReadFile(seriesFixture)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	for _, m := range r.Modes {
		if m.Mode == mode {
			if err := SVG(&svg, m); err != nil {
				t.Fatal(err)
			}
		}
	}
	if svg.Len() == 0 {
		t.Fatalf("%s: no %s mode", seriesFixture, mode)
	}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "chart.svg"), filepath.Join(dir, "chart.png")
	if err := os.WriteFile(in, svg.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command(bin, "--zoom", "2", "--background-color", "white", "-o", out, in).CombinedOutput(); err != nil {
		t.Fatalf("rsvg-convert: %v: %s", err, b)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("RMQT_CHART_PNG"); keep != "" {
		b, _ := os.ReadFile(out)
		_ = os.WriteFile(keep, b, 0o644)
	}
	return img
}

// near reports whether c is within 12 of want in each channel, opaque.
func near(c color.Color, want color.RGBA) bool {
	r, g, b, a := c.RGBA()
	d := func(x uint32, y uint8) bool { v := int(x>>8) - int(y); return v >= -12 && v <= 12 }
	return a>>8 == 0xff && d(r, want.R) && d(g, want.G) && d(b, want.B)
}

// rowsOf lists the rows of column x, from y0 to y1, whose pixel is near col.
func rowsOf(img image.Image, x, y0, y1 int, col color.RGBA) []int {
	var rows []int
	for y := y0; y < y1; y++ {
		if near(img.At(x, y), col) {
			rows = append(rows, y)
		}
	}
	return rows
}

// firstColumn is the leftmost column with a pixel near col in rows y0–y1,
// or -1.
func firstColumn(img image.Image, y0, y1 int, col color.RGBA) int {
	b := img.Bounds()
	for x := b.Min.X; x < b.Max.X; x++ {
		if len(rowsOf(img, x, y0, y1, col)) > 0 {
			return x
		}
	}
	return -1
}

// The fire-and-forget chart shows its loss: in the top panel (the upper
// half of the image), midway between the kill mark and the broker
// accepting AMQP again, the sent line (4,000) is drawn far above the
// delivered line (0 until the drain; 401 in the end).
func TestChartPNGShowsTheGap(t *testing.T) {
	img := renderPNG(t, scenario.FireAndForget)
	b := img.Bounds()
	top := b.Min.Y + b.Dy()/2
	kill := firstColumn(img, b.Min.Y, top, colFault)
	ready := firstColumn(img, b.Min.Y, top, colRecovery)
	if kill < 0 || ready <= kill {
		t.Fatalf("kill mark at column %d, broker-ready mark at %d: want both, kill first", kill, ready)
	}
	x := (kill + ready) / 2
	sent := rowsOf(img, x, b.Min.Y, top, colSent)
	delivered := rowsOf(img, x, b.Min.Y, top, colDelivered)
	if len(sent) == 0 || len(delivered) == 0 {
		t.Fatalf("column %d (kill %d, ready %d): %d sent pixels, %d delivered pixels", x, kill, ready, len(sent), len(delivered))
	}
	// The panel's plot area is over a third of the image's height; the gap
	// is nearly all of it (4,000 of a 4,320 axis).
	if gap := delivered[0] - sent[len(sent)-1]; gap < b.Dy()/4 {
		t.Errorf("column %d: sent line rows %d–%d, delivered line rows %d–%d: gap %d px, want over %d", x, sent[0], sent[len(sent)-1], delivered[0], delivered[len(delivered)-1], gap, b.Dy()/4)
	}
	// After the drain, at the right edge of the plot, the delivered line
	// has risen (401) but stays far below sent.
	right := ready + (ready-kill)/25
	t.Logf("kill %d ready %d mid %d right %d; sent %v delivered %v", kill, ready, x, right, sent, delivered)
	if s, d := rowsOf(img, right, b.Min.Y, top, colSent), rowsOf(img, right, b.Min.Y, top, colDelivered); len(s) == 0 || len(d) == 0 || d[0]-s[len(s)-1] < b.Dy()/5 {
		t.Errorf("column %d after the drain: sent rows %v, delivered rows %v", right, s, d)
	}
}
