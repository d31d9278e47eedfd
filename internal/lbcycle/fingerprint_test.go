package lbcycle

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A line made a member at a time hashes as MembersOf hashes the list: a
// cloud that changes from one to the other changes no recorded fingerprint.
func TestAMembersLineIsMembersOfItsList(t *testing.T) {
	for _, list := range [][]string{nil, {}, {""}, {"a"}, {"10.0.0.1", "10.0.0.2"}, {"x=10.0.0.1:30080/ocid1.instance", "y=[::1]:1"}, {"", ""}} {
		var l MembersLine
		for _, m := range list {
			l.Begin()
			l.Add(m)
		}
		assert.Equal(t, MembersOf(list), l.Members(), "%q", list)
	}
	var l MembersLine
	var list []string
	for i := range 300 {
		l.Begin()
		l.Add("set=10.0.")
		l.AddInt(i)
		list = append(list, "set=10.0."+strconv.Itoa(i))
	}
	assert.Equal(t, MembersOf(list), l.Members())
}
