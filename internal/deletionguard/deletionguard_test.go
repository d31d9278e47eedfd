package deletionguard

import "testing"

func TestHolds(t *testing.T) {
	cases := []struct {
		o           Options
		gone, total int
		want        bool
	}{
		{Default, 2, 3, false}, // a small cluster loses Min at once
		{Default, 3, 4, true},  // more than Min of a small one
		{Default, 25, 100, false},
		{Default, 26, 100, true},
		{Options{Share: 1, Min: 2}, 100, 100, false}, // off
		{Options{Share: 0, Min: 0}, 1, 100, true},
	}
	for _, c := range cases {
		if got := c.o.Holds(c.gone, c.total); got != c.want {
			t.Errorf("%+v.Holds(%d, %d) = %v, want %v", c.o, c.gone, c.total, got, c.want)
		}
	}
}
