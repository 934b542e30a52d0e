// Command genlog writes a generated access log in nginx's combined
// format, the input of the replay benchmark (replay.sh): a day of
// traffic from a few heavy callers and many light ones, to the API, the
// search boxes and static files.
//
// Usage:
//
//	go run ./cmd/genlog -lines 2000000 > access.log
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"time"
)

func main() {
	lines := flag.Int("lines", 2_000_000, "the number of lines")
	callers := flag.Int("callers", 50_000, "the number of distinct addresses")
	seed := flag.Uint64("seed", 1, "the random seed: the same seed writes the same log")
	flag.Parse()
	rng := rand.New(rand.NewPCG(*seed, 7))
	zipf := rand.NewZipf(rng, 1.2, 1, uint64(*callers-1))
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	defer w.Flush()
	start := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	step := 24 * time.Hour / time.Duration(*lines)
	boxes := []string{"project", "dataset", "sample", "measurement", "person", "organization", "publication", "tag", "ror"}
	agents := []string{
		"Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36",
		"python-requests/2.31.0",
		"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15",
		"curl/8.5.0",
	}
	for i := range *lines {
		t := start.Add(time.Duration(i) * step)
		c := zipf.Uint64()
		addr := fmt.Sprintf("%d.%d.%d.%d", 11+c>>16%200, c>>8&255, c&255, 1+c%250)
		user := "-"
		if c%7 == 3 {
			user = fmt.Sprintf("user%d", c)
		}
		var path string
		switch r := rng.IntN(10); {
		case r < 6:
			path = fmt.Sprintf("/api/records/%d?page=%d", rng.IntN(100000), rng.IntN(20))
		case r < 8:
			path = fmt.Sprintf("/autocomplete/%s?q=%c%c", boxes[c%9], 'a'+rng.IntN(26), 'a'+rng.IntN(26))
		default:
			path = "/static/app.js"
		}
		fmt.Fprintf(w, "%s - %s [%s] \"GET %s HTTP/1.1\" 200 %d \"https://portal.example.org/search\" \"%s\"\n",
			addr, user, t.Format("02/Jan/2006:15:04:05 -0700"), path, 200+rng.IntN(5000), agents[c%4])
	}
}
