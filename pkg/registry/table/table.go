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

// Package table builds the tables kubectl get prints (metav1.Table) from
// one object or a list of them, for the registries' table convertors:
// they say what the columns are and how one item makes a row.
package table

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Build converts obj, one object or a list, to a table of columns whose
// rows row makes, one per object or list item; the list's resourceVersion,
// continue and remaining item count carry over. Table options may ask for
// no headers.
func Build(obj, tableOptions runtime.Object, columns []metav1.TableColumnDefinition, row func(runtime.Object) (metav1.TableRow, error)) (*metav1.Table, error) {
	noHeaders := false
	if tableOptions != nil {
		opts, ok := tableOptions.(*metav1.TableOptions)
		if !ok {
			return nil, fmt.Errorf("unrecognized type %T for table options, can't display tabular output", tableOptions)
		}
		if opts != nil {
			noHeaders = opts.NoHeaders
		}
	}
	table := &metav1.Table{}
	if meta.IsListType(obj) {
		table.Rows = []metav1.TableRow{} // an empty list has rows: none
		if err := meta.EachListItem(obj, func(item runtime.Object) error {
			r, err := row(item)
			table.Rows = append(table.Rows, r)
			return err
		}); err != nil {
			return nil, err
		}
		list, err := meta.ListAccessor(obj)
		if err != nil {
			return nil, err
		}
		table.ResourceVersion = list.GetResourceVersion()
		table.Continue = list.GetContinue()
		table.RemainingItemCount = list.GetRemainingItemCount()
	} else {
		r, err := row(obj)
		if err != nil {
			return nil, err
		}
		table.Rows = []metav1.TableRow{r}
		if m, err := meta.CommonAccessor(obj); err == nil {
			table.ResourceVersion = m.GetResourceVersion()
		}
	}
	if !noHeaders {
		table.ColumnDefinitions = columns
	}
	return table, nil
}
