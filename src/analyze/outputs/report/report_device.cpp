#include "report_device.hpp"

#include <sstream>

#include "device_time.hpp"
#include "kineto_import.hpp"
#include "text_format.hpp"
#include "trace_time.hpp"

namespace dftracer::analyze {

namespace {

// Tables filled from the `device --format json` document, plain DOM.
const char* kSection = R"HTML(<div id="device-section"><h2>GPU: device time</h2>
<p class="note" id="device-note"></p>
<h3>Steps</h3>
<table id="device-steps" class="device"><thead><tr><th>step</th><th>span (ms)</th><th>GPU busy (ms)</th><th>GPU idle</th>
<th>device time (ms)</th><th>launch delay (us)</th><th>bound</th></tr></thead><tbody></tbody></table>
<h3>By category</h3>
<table id="device-category" class="device"><thead><tr><th>category</th><th>events</th><th>device (ms)</th><th>launch calls (ms)</th></tr></thead><tbody></tbody></table>
<h3>Top kernels</h3>
<table id="device-kernel" class="device"><thead><tr><th>kernel</th><th>events</th><th>device (ms)</th><th>mean (us)</th><th>launch delay (us)</th></tr></thead><tbody></tbody></table>
<h3>Top ops by device time</h3>
<table id="device-op" class="device"><thead><tr><th>op</th><th>events</th><th>device (ms)</th><th>CPU self (ms)</th></tr></thead><tbody></tbody></table></div>
<style>table.device{border-collapse:collapse;font-size:12px}table.device td,table.device th{border:1px solid #ddd;padding:2px 8px;text-align:right}table.device td:first-child{text-align:left;max-width:40em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}</style>
<script>
(function(){
var D=@DEVICE@;
function fill(id,rows){var body=document.querySelector("#"+id+" tbody");
  rows.forEach(function(r){var tr=document.createElement("tr");
    r.forEach(function(v){var td=document.createElement("td");td.textContent=v;tr.appendChild(td);});body.appendChild(tr);});}
function ms(v){return (v/1e3).toFixed(3);} function us(v){return v===null?"-":v.toFixed(1);}
var L=D.linked, n=D.device_events;
document.getElementById("device-note").textContent=n+" device events, "+ms(D.device_us)+" ms of device time; linked to their launch call: "+
  L.launch+", to an op: "+L.op+", to a module: "+L.module+", to a step: "+L.step+". A step is GPU-bound when some GPU is busy "+
  (100*D.gpu_bound_busy_share)+" % of it or more.";
fill("device-steps",D.step.map(function(s){return [s.step,ms(s.span_us),ms(s.gpu_busy_us),(100*s.idle_share).toFixed(1)+" %",ms(s.device_us),us(s.launch_delay_mean_us),s.bound];}));
fill("device-category",D.category.map(function(g){return [g.key,g.events,ms(g.device_us),ms(g.cpu_us)];}));
fill("device-kernel",D.kernel.slice(0,20).map(function(g){return [g.key,g.events,ms(g.device_us),(g.device_us/g.events).toFixed(1),us(g.launch_delay_mean_us)];}));
fill("device-op",D.op.filter(function(g){return g.events>0;}).slice(0,20).map(function(g){return [g.key,g.events,ms(g.device_us),ms(g.cpu_us)];}));
document.body.setAttribute("data-device-rendered","yes");
})();
</script>
)HTML";

}  // namespace

std::string with_device_section(std::string page, const std::vector<std::string>& files, unsigned threads,
                                const ReadOptions& options, std::string* answer) {
  const DeviceReport r = device_report(read_device_timeline(files, threads, options));
  const size_t at = page.rfind("</body>");
  if (r.device_events == 0 || at == std::string::npos) return page;
  size_t gpu_bound = 0, cpu_bound = 0;
  int64_t span = 0, busy = 0;
  for (const DeviceStep& s : r.steps) {
    gpu_bound += std::string(s.bound) == "gpu-bound";
    cpu_bound += std::string(s.bound) == "cpu-bound";
    span = saturating_add(span, s.span_ns);
    busy = saturating_add(busy, s.busy_ns);
  }
  std::string line = "GPU: " + std::to_string(r.device_events) + " device events, " +
                     human_time(ns_to_us(r.device_ns)) + " of device time";
  if (!r.steps.empty())
    line += "; steps: " + std::to_string(gpu_bound) + " GPU-bound, " + std::to_string(cpu_bound) +
            " CPU-bound, GPU idle " + fmt_num(span ? 100.0 * double(span - busy) / double(span) : 0, 1) + "% of their time";
  *answer += line + "\n";
  std::ostringstream os;
  write_device_json(os, r);
  std::string data;
  for (char c : os.str()) {  // inside <script>: "</" must not close it early
    if (c == '<') data += "\\u003c";
    else if (c != '\n') data += c;
  }
  std::string section = kSection;
  section.replace(section.find("@DEVICE@"), 8, data);
  page.insert(at, section);
  return page;
}

}  // namespace dftracer::analyze
