package layout

import "testing"

func TestReaderGetsTheLock(t *testing.T) {
	for _, tc := range []struct {
		children []string
		node     string
		acquired bool
		watch    string
		found    bool
	}{
		{[]string{"__READ__1", "__READ__2"}, "__READ__2", true, "", true},
		{[]string{"__READ__1", "__WRIT__2", "__READ__3"}, "__READ__1", true, "", true},
		{[]string{"__READ__1", "__WRIT__2", "__READ__3"}, "__READ__3", false, "__WRIT__2", true},
		{[]string{"__WRIT__1", "__WRIT__2", "__READ__3"}, "__READ__3", false, "__WRIT__1", true},
		{[]string{"__WRIT__1"}, "__READ__9", false, "", false},
	} {
		acquired, watch, found := ReaderGetsTheLock(tc.children, tc.node)
		if acquired != tc.acquired || watch != tc.watch || found != tc.found {
			t.Errorf("ReaderGetsTheLock(%v, %s) = %v, %q, %v; want %v, %q, %v",
				tc.children, tc.node, acquired, watch, found, tc.acquired, tc.watch, tc.found)
		}
	}
}
