// Megascale stats (XProf's tool of that name): each DCN collective of a multislice TPU run, its
// slack, stalls and the bandwidth it needs; aggregated stall per collective above the table.
import { h } from "../lib/dom.js";
import * as fmt from "../lib/format.js";
import { DataTable, rowsOf } from "../lib/table.js";
import { ToolView, tiles } from "../lib/tool_view.js";

export const ms = (v) => (v === null || v === undefined ? fmt.DASH : fmt.time(v * 1000));

export const COLUMNS = [
  { key: "host", label: "Host", align: "left", facet: true, filter: false },
  { key: "rendezvous", label: "Rendezvous", align: "left" },
  { key: "recv_op_name", label: "Recv op", align: "left" },
  { key: "send_op_name", label: "Send op", align: "left" },
  { key: "transfer_type", label: "Transfer", align: "left", facet: true, filter: false },
  { key: "slack_time_ms", label: "Slack", format: ms, title: "Recv-done start - send start - time of DCN ops overlapping it (mean per occurrence)" },
  { key: "host_stall_ms", label: "Host stall", format: ms, optional: true, title: "Not read (XProf reads no host plane for it either)" },
  { key: "observed_duration_ms", label: "Observed", format: ms, title: "Recv-done end - send start (mean)" },
  { key: "send_stall_ms", label: "Send", format: ms },
  { key: "send_done_stall_ms", label: "SendDone", format: ms },
  { key: "recv_stall_ms", label: "Recv", format: ms },
  { key: "recv_done_stall_ms", label: "RecvDone", format: ms },
  { key: "stall_duration_ms", label: "Stall", format: ms, title: "Time the collective's own ops ran (mean)" },
  { key: "total_stall_ms", label: "Total stall", format: ms, title: "Stall x occurrences" },
  { key: "occurrences", label: "#", title: "Occurrences" },
  { key: "bytes_transmitted", label: "Bytes", format: fmt.bytes, title: "Sent over DCN per occurrence" },
  { key: "required_bandwidth_gbps", label: "Needed Gbps", format: (v) => fmt.sig3(v), title: "Bytes / slack: the bandwidth that hides the transfer" },
];

export class MegascaleView extends ToolView {
  constructor(model, el) {
    super(model, el, { rootClass: "xw-ms" });
  }

  build() {
    const s = this.summary;
    const head = h("div", { className: "xw-tool-head" },
      h("div", { className: "xw-tool-title" }, "Megascale Stats ", h("span", {}, s.source ?? "")),
      tiles([
        ["DCN collectives", fmt.count(s.collectives)],
        ["Occurrences", fmt.count(s.occurrences)],
        ["Total stall", ms(s.total_stall_ms), "all collectives, all occurrences"],
        ["Bytes per round", fmt.bytes(s.bytes), "one occurrence of each collective"],
      ]));
    this.table = new DataTable({ columns: COLUMNS, sort: { key: "total_stall_ms", descending: true },
      csvName: "megascale_stats.csv", placeholder: "Filter by collective or op" });
    this.chartBox.classList.add("xw-chart-wide"); // the bars take the view's width
    return [head, h("div", { className: "xw-body" }, this.chartBox, this.table.el)];
  }

  show(content) {
    this.table.setRows(rowsOf(content.rows));
    return content.charts;
  }
}
