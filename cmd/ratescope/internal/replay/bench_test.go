package replay_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/ratescope/ratescope/cmd/ratescope/internal/replay"
)

// BenchmarkReplay replays combined lines of 50,000 callers, a third of
// them from 20 busy ones, at 23 lines a second (2,000,000 a day, as
// benchmarks/replay.sh's log); b.N lines.
func BenchmarkReplay(b *testing.B) {
	var log bytes.Buffer
	const n = 200_000
	for i := range n {
		c := i * 7919 % 50_000
		if i%3 == 0 {
			c = i % 20
		}
		path := "/api/records/1?page=2"
		if i%5 == 0 {
			path = "/autocomplete/project?q=ab"
		}
		fmt.Fprintf(&log, "11.%d.%d.%d - - [%s] \"GET %s HTTP/1.1\" 200 3185 \"https://portal.example.org/search\" \"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36\"\n",
			c>>16, c>>8&255, c&255, t0.Add(time.Duration(i)*time.Second/23).Format("02/Jan/2006:15:04:05 -0700"), path)
	}
	data := log.Bytes()
	b.SetBytes(int64(len(data) / n))
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += n {
		// A replayer per pass, so that time never goes back.
		r, err := replay.New(replay.Options{Settings: replay.DefaultSettings()})
		if err != nil {
			b.Fatal(err)
		}
		chunk := data
		if b.N-done < n {
			// The first b.N-done lines.
			k := 0
			for range b.N - done {
				k += bytes.IndexByte(chunk[k:], '\n') + 1
			}
			chunk = chunk[:k]
		}
		if err := r.Read(bytes.NewReader(chunk)); err != nil {
			b.Fatal(err)
		}
	}
}
