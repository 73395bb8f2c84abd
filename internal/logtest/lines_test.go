package logtest

import "testing"

// Records decodes every line of a JSON log and Messages selects by msg;
// blank lines are no records.
func TestRecordsAndMessages(t *testing.T) {
	log := `{"msg":"request","path":"/a"}` + "\n\n" + `{"msg":"other"}` + "\n" + `{"msg":"request","path":"/b"}` + "\n"
	if got := Records(t, log); len(got) != 3 {
		t.Errorf("%d records, want 3: %v", len(got), got)
	}
	got := Messages(t, log, "request")
	if len(got) != 2 || got[0]["path"] != "/a" || got[1]["path"] != "/b" {
		t.Errorf("request records %v, want /a and /b", got)
	}
	ents := Lines[struct{ Msg, Path string }](t, log)
	if len(ents) != 3 || ents[2].Path != "/b" {
		t.Errorf("Lines into a struct: %+v", ents)
	}
}
