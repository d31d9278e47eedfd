package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"time"
)

// statusArgs make the node controller log its status pass ("Update N nodes
// status took D", at --v=2) once a minute, so that the bench sees one start
// after every Node is initialised.
var statusArgs = []string{"--v=2", "--node-status-update-frequency=1m"}

var statusLine = regexp.MustCompile(`^I(\d{4}) (\d\d:\d\d:\d\d\.\d+) .*Update (\d+) nodes status took ([^ ]+?)\.?"?$`)

// statusPass waits for the log of a status pass over n Nodes that began after
// after, and returns how long it took.
func (b *bed) statusPass(n int, after time.Time, timeout time.Duration) (time.Duration, error) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if d, ok, err := b.findStatusPass(n, after); err != nil || ok {
			return d, err
		}
		time.Sleep(time.Second)
	}
	return 0, fmt.Errorf("no status pass over %d Nodes began after %s within %s (CCM log %s)", n, after.Format(time.TimeOnly), timeout, b.log)
}

func (b *bed) findStatusPass(n int, after time.Time) (time.Duration, bool, error) {
	f, err := os.Open(b.log)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := statusLine.FindStringSubmatch(sc.Text())
		if m == nil || m[3] != strconv.Itoa(n) {
			continue
		}
		d, err := time.ParseDuration(m[4])
		if err != nil {
			return 0, false, fmt.Errorf("%s: %q: %w", b.log, sc.Text(), err)
		}
		// klog's header has the month, day and time of day (local time).
		at, err := time.ParseInLocation("0102 15:04:05.000000", m[1]+" "+m[2], time.Local)
		if err != nil {
			return 0, false, err
		}
		at = at.AddDate(after.Year(), 0, 0)
		if at.Add(-d).After(after) {
			return d, true, nil
		}
	}
	return 0, false, sc.Err()
}
