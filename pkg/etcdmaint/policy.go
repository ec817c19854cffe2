/*
Copyright The events-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package etcdmaint

import (
	"context"
	"fmt"
)

// Hold returns the revision compaction must not pass (the first one a
// reader still needs), or false when nothing holds it back. The server's
// is the archive's: the revision after its checkpoint, while the
// checkpoint is younger than its bound (archiver.CompactionHold).
type Hold func(ctx context.Context) (revision int64, ok bool, err error)

// Policy is where every compaction the server runs goes: the periodic
// Compactor's and the Maintainer's under NOSPACE. A compaction due at a
// revision goes there, held back to the Hold when the hold is older; a
// hold that cannot be read skips the compaction, as compacting without
// knowing what the reader needs could lose it. Only NOSPACE recovery
// goes past the hold, when compacting to it frees too little, and it
// counts what it compacts past (see Maintainer.Sync). The zero Policy
// holds nothing back.
//
// The generic storage's compaction knows no hold: with an archive the
// server turns it off and runs the Compactor instead (see pkg/apiserver's
// ArchiveConfig.CompactionInterval).
type Policy struct {
	// Hold, when set, holds compaction back.
	Hold Hold
}

// Target is where one compaction goes.
type Target struct {
	// Revision is the revision to compact to.
	Revision int64
	// Held tells that Revision is the hold, older than the revision the
	// compaction was due at.
	Held bool
}

// Target returns where a compaction due at due goes: due, or the hold
// when it is older.
func (p Policy) Target(ctx context.Context, due int64) (Target, error) {
	if p.Hold == nil {
		return Target{Revision: due}, nil
	}
	hold, ok, err := p.Hold(ctx)
	if err != nil {
		return Target{}, fmt.Errorf("reading what holds compaction back: %w", err)
	}
	if ok && hold < due {
		return Target{Revision: hold, Held: true}, nil
	}
	return Target{Revision: due}, nil
}
