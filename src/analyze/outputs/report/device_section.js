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
fill("device-steps",D.step.map(function(s){return [s.step,s.label,ms(s.span_us),ms(s.gpu_busy_us),(100*s.idle_share).toFixed(1)+" %",ms(s.device_us),us(s.launch_delay_mean_us),s.bound];}));
function grp(g){return [g.key,g.events,ms(g.device_us),ms(g.cpu_us),us(g.launch_delay_mean_us)];}
fill("device-phase",D.phase.filter(function(g){return g.events>0;}).map(grp));
fill("device-module",D.module.filter(function(g){return g.events>0;}).slice(0,20).map(grp));
fill("device-category",D.category.map(function(g){return [g.key,g.events,ms(g.device_us),ms(g.cpu_us)];}));
fill("device-kernel",D.kernel.slice(0,20).map(function(g){return [g.key,g.events,ms(g.device_us),(g.device_us/g.events).toFixed(1),us(g.launch_delay_mean_us)];}));
fill("device-op",D.op.filter(function(g){return g.events>0;}).slice(0,20).map(function(g){return [g.key,g.events,ms(g.device_us),ms(g.cpu_us)];}));
document.body.setAttribute("data-device-rendered","yes");
})();
