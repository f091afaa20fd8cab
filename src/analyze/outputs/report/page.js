(function(){
"use strict";
var D = JSON.parse(document.getElementById("report-data").textContent);
var NS = "http://www.w3.org/2000/svg";
var COLORS = ["#4e79a7","#f28e2b","#e15759","#76b7b2","#59a14f","#edc948","#b07aa1","#ff9da7","#9c755f","#bab0ac"];
function el(name, attrs, parent){ var e=document.createElementNS(NS,name); for(var k in attrs) e.setAttribute(k,attrs[k]); if(parent) parent.appendChild(e); return e; }
function fmt(us){ if(us>=1e6) return (us/1e6).toFixed(3)+" s"; if(us>=1e3) return (us/1e3).toFixed(3)+" ms"; return us.toFixed(3)+" us"; }
// One bar per row [name, count, self_us, total_us]; `tip` (optional) makes
// a row's tooltip instead.
function bars(target, rows, title, tip){
  var host=document.getElementById(target);
  if(!rows.length){ host.textContent="No events."; return; }
  var rowH=20, labelW=330, W=1000, H=rows.length*rowH+10, max=0;
  rows.forEach(function(r){ if(r[2]>max) max=r[2]; });
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":title},host);
  rows.forEach(function(r,i){
    var y=5+i*rowH, w=max>0?(W-labelW-130)*r[2]/max:0;
    var label=r[0].length>52?r[0].slice(0,25)+"\u2026"+r[0].slice(-25):r[0];
    el("text",{x:labelW-6,y:y+14,"text-anchor":"end"},svg).textContent=label;
    var b=el("rect",{"class":"bar",x:labelW,y:y+2,width:Math.max(w,1),height:rowH-5,fill:COLORS[i%COLORS.length]},svg);
    el("title",{},b).textContent=tip?tip(r):r[0]+": "+fmt(r[2])+" self, "+fmt(r[3])+" total, in "+r[1]+" events";
    el("text",{x:labelW+Math.max(w,1)+5,y:y+14},svg).textContent=fmt(r[2])+(r[1]>0?" ("+r[1]+")":"");
  });
}
function icicle(target, tree){
  var host=document.getElementById(target);
  if(!tree || !tree.roots.length){ host.textContent="No events with a module."; return; }
  var rowH=22, W=1000, depth=0;
  (function deepest(ns){ ns.forEach(function(n){ depth=Math.max(depth,n.depth+1); deepest(n.children); }); })(tree.roots);
  var svg=el("svg",{"class":"chart","width":W,"height":depth*rowH+2,"role":"img","aria-label":"module tree"},host);
  var scale=tree.tree_us>0?(W-2)/tree.tree_us:0, i=0;
  function draw(nodes, x0){
    var x=x0;
    nodes.forEach(function(n){
      var w=n.total_us*scale, y=1+n.depth*rowH;
      var r=el("rect",{"class":"node",x:x+1,y:y,width:Math.max(w-1,1),height:rowH-2,fill:COLORS[(i++)%COLORS.length]},svg);
      el("title",{},r).textContent=n.path+": "+fmt(n.total_us)+" total, "+fmt(n.self_us)+" self, "+(100*n.share).toFixed(2)+"%, "+n.count+" events";
      if(w>50){ var t=el("text",{x:x+4,y:y+15},svg); t.textContent=n.name.length*6.5>w-8?n.name.slice(0,Math.max(1,Math.floor((w-8)/6.5)))+"\u2026":n.name; }
      draw(n.children, x);
      x+=w;
    });
  }
  draw(tree.roots, 0);
}
function timeline(target){
  var host=document.getElementById(target), procs=D.timeline;
  if(!procs.length){ host.textContent="No timestamped events."; return; }
  var W=1000,H=260,L=60,B=30,T=10,R=20, tmin=Infinity,tmax=-Infinity,cmax=0;
  procs.forEach(function(p){ p.bins.forEach(function(b){ tmin=Math.min(tmin,b[0]); tmax=Math.max(tmax,b[0]+p.width); cmax=Math.max(cmax,b[1]/p.width); }); });
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"events per process over time"},host);
  var sx=function(t){ return L+(W-L-R)*(t-tmin)/Math.max(tmax-tmin,1); }, sy=function(r){ return H-B-(H-B-T)*r/Math.max(cmax,1e-12); };
  el("line",{x1:L,y1:H-B,x2:W-R,y2:H-B,stroke:"#888"},svg); el("line",{x1:L,y1:T,x2:L,y2:H-B,stroke:"#888"},svg);
  el("text",{x:L,y:H-8},svg).textContent="0 s";
  el("text",{x:W-R,y:H-8,"text-anchor":"end"},svg).textContent=((tmax-tmin)/1e6).toFixed(3)+" s";
  el("text",{x:L-4,y:T+10,"text-anchor":"end"},svg).textContent=(cmax*1e6).toPrecision(3)+"/s";
  var legend=document.getElementById("timeline-legend");
  procs.forEach(function(p,i){
    var c=COLORS[i%COLORS.length];
    p.bins.forEach(function(b){
      var x=sx(b[0]), w=Math.max(sx(b[0]+p.width)-x,1), y=sy(b[1]/p.width);
      var r=el("rect",{"class":"bin",x:x,y:y,width:w,height:H-B-y,fill:c,"fill-opacity":0.55},svg);
      el("title",{},r).textContent=p.label+": "+b[1]+" events";
    });
    var s=document.createElement("span"); s.innerHTML="<i style=\"background:"+c+"\"></i>"; s.appendChild(document.createTextNode(p.label)); legend.appendChild(s);
  });
}
// Steps (steps.hpp): one stacked bar per step, its wall time split by category.
// A row: [label, duration, the categories..., outlier, start, duration, pid, slow].
function stepBars(){
  var S=D.steps; if(!S || !S.rows.length) return;
  var k=2+S.categories.length;
  document.getElementById("steps-section").hidden=false;
  document.getElementById("steps-summary").textContent=S.rows.length+" steps; first step: compile "+(100*S.first_compile_share).toFixed(1)+"% of its wall time. Outliers (! slow, ? fast): "+S.rule+".";
  var rowH=20, labelW=160, W=1000, H=S.rows.length*rowH+10, max=0;
  S.rows.forEach(function(r){ if(r[1]>max) max=r[1]; });
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"time per step"},document.getElementById("by-step"));
  S.rows.forEach(function(r,i){
    var y=5+i*rowH, x=labelW;
    el("text",{x:labelW-6,y:y+14,"text-anchor":"end"},svg).textContent=(r[k]?(r[k+4]?"! ":"? "):"")+r[0];
    for(var c=0;c<S.categories.length;c++){
      var w=max>0?(W-labelW-130)*r[2+c]/max:0; if(w<=0) continue;
      var b=el("rect",{"class":"step-part",x:x,y:y+2,width:w,height:rowH-5,fill:COLORS[c]},svg);
      el("title",{},b).textContent=r[0]+": "+S.categories[c]+" "+fmt(r[2+c]); x+=w;
    }
    el("text",{x:x+5,y:y+14},svg).textContent=fmt(r[1]);
  });
  var legend=document.getElementById("steps-legend");
  S.categories.forEach(function(c,i){ var s=document.createElement("span"); s.innerHTML="<i style=\"background:"+COLORS[i]+"\"></i>"; s.appendChild(document.createTextNode(c)); legend.appendChild(s); });
}
// The roofline (efficiency.hpp): log-log, the bandwidth slope up to the
// ridge, then the compute roof; one dot per op, its area its self time.
function roofline(){
  var R=D.roofline, host=document.getElementById("roofline"), note=document.getElementById("roofline-note");
  var have=R.peak_gflops!==null && R.peak_gbps!==null;
  note.textContent=(have?"Peaks "+R.peak_gflops.toFixed(1)+" GFLOP/s and "+R.peak_gbps.toFixed(1)+" GB/s, measured by 'dftracer-analyze calibrate' ("+R.calibration+").":"No calibration found: run 'dftracer-analyze calibrate' (it writes "+R.calibration+") for the roofs.")+
    (R.without_bytes?" "+R.without_bytes+" op(s) with FLOPs but no bytes are not drawn.":"")+(R.above_peak?" "+R.above_peak:"");
  if(!R.points.length){ host.textContent="No op declared both FLOPs and bytes."; return; }
  var W=1000,H=360,L=70,B=40,T=10,Rm=20, xs=[], ys=[];
  R.points.forEach(function(p){ xs.push(p[1]); ys.push(p[2]); });
  if(have){ ys.push(R.peak_gflops); xs.push(R.peak_gflops/R.peak_gbps); }
  var lx0=Math.floor(Math.log10(Math.min.apply(null,xs)))-0.2, lx1=Math.ceil(Math.log10(Math.max.apply(null,xs)))+0.2;
  var ly0=Math.floor(Math.log10(Math.min.apply(null,ys)))-0.2, ly1=Math.log10(Math.max.apply(null,ys))+0.3;
  var sx=function(v){ return L+(W-L-Rm)*(Math.log10(v)-lx0)/(lx1-lx0); }, sy=function(v){ return H-B-(H-B-T)*(Math.log10(v)-ly0)/(ly1-ly0); };
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"roofline"},host);
  el("line",{x1:L,y1:H-B,x2:W-Rm,y2:H-B,stroke:"#888"},svg); el("line",{x1:L,y1:T,x2:L,y2:H-B,stroke:"#888"},svg);
  for(var e=Math.ceil(lx0);e<=lx1;e++){ el("text",{x:sx(Math.pow(10,e)),y:H-B+15,"text-anchor":"middle"},svg).textContent=Math.pow(10,e)+""; }
  for(var f=Math.ceil(ly0);f<=ly1;f++){ el("text",{x:L-4,y:sy(Math.pow(10,f))+4,"text-anchor":"end"},svg).textContent=Math.pow(10,f)+""; }
  el("text",{x:(L+W)/2,y:H-6,"text-anchor":"middle"},svg).textContent="FLOPs per byte (log)";
  el("text",{x:12,y:T+10},svg).textContent="GFLOP/s";
  if(have){
    var ridge=R.peak_gflops/R.peak_gbps, x0=Math.pow(10,lx0), x1=Math.pow(10,lx1);
    var pts=[[x0,x0*R.peak_gbps],[ridge,R.peak_gflops],[x1,R.peak_gflops]].filter(function(p){ return p[1]>=Math.pow(10,ly0); });
    el("polyline",{"class":"roof",points:pts.map(function(p){ return sx(p[0])+","+sy(p[1]); }).join(" "),fill:"none",stroke:"#c33","stroke-width":2},svg);
    el("text",{x:W-Rm-4,y:sy(R.peak_gflops)-5,"text-anchor":"end"},svg).textContent="peak "+R.peak_gflops.toFixed(1)+" GFLOP/s";
  }
  var smax=0, dots=[]; R.points.forEach(function(p){ smax=Math.max(smax,p[3]); });
  R.points.forEach(function(p,i){
    var c=el("circle",{"class":"op",cx:sx(p[1]),cy:sy(p[2]),r:3+9*Math.sqrt(smax>0?p[3]/smax:0),fill:COLORS[i%COLORS.length],"fill-opacity":0.7},svg);
    el("title",{},c).textContent=p[0]+": "+p[2].toFixed(2)+" GFLOP/s at "+p[1].toFixed(2)+" FLOP/B, "+fmt(p[3])+" self"+(p[4]!==null?", "+(100*p[4]).toFixed(1)+(p[6]?"%! (above":"% of")+" the "+p[5]+" roof"+(p[6]?": the calibration is too low)":""):"");
    dots.push({x:sx(p[1]),y:sy(p[2]),r:+c.getAttribute("r"),text:shortOp(p[0])+(p[6]?" (!)":"")});
  });
  var missed=placeLabels(svg, dots.slice(0,12), {x:L,y:T,w:W-Rm-L,h:H-B-T});
  var rest=missed.map(function(d){ return d.text; }), more=Math.max(R.points.length-12,0);
  document.getElementById("roofline-unlabelled").textContent=rest.length||more?"Not labelled (no room, or past the 12 with the most self time; hover a dot for its name): "+rest.join(", ")+(more?(rest.length?" and ":"")+more+" more":"")+".":"";
}
// An op's name without the capture's "function."/"kernel." prefix and ".default" overload.
function shortOp(n){ return n.replace(/^(function|kernel)\./,"").replace(/\.default$/,""); }
function boxOf(e){ var b=e.getBBox(); return {x:b.x,y:b.y,w:b.width,h:b.height}; }
function overlaps(a,b){ return a.x<b.x+b.w && b.x<a.x+a.w && a.y<b.y+b.h && b.y<a.y+a.h; }
// Labels beside dots ({x,y,r,text}, most important first), each at the first
// of eight places around its dot that stays inside `area` and overlaps no
// text already drawn, no other label and no other dot; a label with no free
// place is left out. Returns the dots left without a label.
function placeLabels(svg, dots, area){
  var taken=[].map.call(svg.querySelectorAll("text"), boxOf), missed=[];
  var circles=[].map.call(svg.querySelectorAll("circle"), boxOf);
  dots.forEach(function(d){
    var t=el("text",{"class":"point-label",x:0,y:0},svg); t.textContent=d.text;
    var b=boxOf(t), g=d.r+2, asc=-b.y, done=false;
    var spots=[[g,-g],[g,g+asc],[-g-b.w,-g],[-g-b.w,g+asc],[-b.w/2,-g-2],[-b.w/2,g+asc+2],[g+2,asc/2],[-g-2-b.w,asc/2]];
    for(var k=0;k<spots.length && !done;k++){
      var r={x:d.x+spots[k][0],y:d.y+spots[k][1]+b.y,w:b.w,h:b.h};
      if(r.x<area.x || r.y<area.y || r.x+r.w>area.x+area.w || r.y+r.h>area.y+area.h) continue;
      if(taken.some(function(o){ return overlaps(r,o); })) continue;
      if(circles.some(function(o){ return overlaps(r,{x:o.x+2,y:o.y+2,w:o.w-4,h:o.h-4}); })) continue;
      t.setAttribute("x",d.x+spots[k][0]); t.setAttribute("y",d.y+spots[k][1]); taken.push(r); done=true;
    }
    if(!done){ svg.removeChild(t); missed.push(d); }
  });
  return missed;
}
// Steps per process over time: one row per process, one box per step (an
// outlier outlined, ! slow, ? fast), on the time axis of the event timeline.
function stepTimeline(){
  var S=D.steps, host=document.getElementById("step-timeline");
  if(!S || !S.rows.length){ host.textContent="No steps found."; return; }
  var k=2+S.categories.length;  // outlier, start, duration, pid, slow
  var pids=[], tmax=0; S.rows.forEach(function(r){ if(pids.indexOf(r[k+3])<0) pids.push(r[k+3]); tmax=Math.max(tmax,r[k+1]+r[k+2]); });
  var L=110,W=1000,Rm=20,rowH=26,H=pids.length*rowH+30;
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"steps per process"},host);
  var sx=function(t){ return L+(W-L-Rm)*t/Math.max(tmax,1); };
  pids.forEach(function(p,i){ el("text",{x:L-6,y:8+i*rowH+15,"text-anchor":"end"},svg).textContent="pid "+p; });
  S.rows.forEach(function(r,i){
    var y=8+pids.indexOf(r[k+3])*rowH, x=sx(r[k+1]), w=Math.max(sx(r[k+1]+r[k+2])-x,1);
    var b=el("rect",{"class":"step-box",x:x,y:y,width:w,height:rowH-6,fill:COLORS[i%COLORS.length],"fill-opacity":0.6,stroke:r[k]?"#c00":"none","stroke-width":2},svg);
    el("title",{},b).textContent=(r[k]?(r[k+4]?"slow outlier ":"fast outlier "):"")+r[0]+": "+fmt(r[k+2])+" from "+fmt(r[k+1]);
  });
  el("text",{x:L,y:H-6},svg).textContent="0 s"; el("text",{x:W-Rm,y:H-6,"text-anchor":"end"},svg).textContent=fmt(tmax);
}
// I/O (io_view.hpp): rows [name, calls, time_us, read_bytes, write_bytes];
// bandwidth: read and write MiB/s per bin, side by side.
function mib(b){ return (b/1048576).toFixed(3)+" MiB"; }
function ioTip(r){ return r[0]+": "+fmt(r[2])+" in "+r[1]+" calls; read "+mib(r[3])+", wrote "+mib(r[4]); }
function ioBandwidth(){
  var B=D.io.bandwidth, host=document.getElementById("io-bandwidth");
  if(!B.bins.length){ host.textContent="No read or write calls."; return; }
  var W=1000,H=220,L=90,Bm=30,T=10,R=20, span=B.bins[B.bins.length-1][0]+B.bin_s, max=0;
  B.bins.forEach(function(b){ max=Math.max(max,b[1],b[2]); });
  var rate=function(bytes){ return bytes/1048576/B.bin_s; };
  var svg=el("svg",{"class":"chart","width":W,"height":H,"role":"img","aria-label":"I/O bandwidth over time"},host);
  var sx=function(t){ return L+(W-L-R)*t/span; }, sy=function(v){ return H-Bm-(H-Bm-T)*v/Math.max(rate(max),1e-12); };
  el("line",{x1:L,y1:H-Bm,x2:W-R,y2:H-Bm,stroke:"#888"},svg); el("line",{x1:L,y1:T,x2:L,y2:H-Bm,stroke:"#888"},svg);
  el("text",{x:L,y:H-8},svg).textContent="0 s";
  el("text",{x:W-R,y:H-8,"text-anchor":"end"},svg).textContent=fmt(span*1e6)+" ("+fmt(B.bin_s*1e6)+" bins)";
  // The scale's top left of the axis, where no bar is drawn (inside the plot the tallest bar hid it).
  el("line",{x1:L-3,y1:T,x2:L,y2:T,stroke:"#888"},svg);
  el("text",{"class":"axis-max",x:L-5,y:T+4,"text-anchor":"end"},svg).textContent=rate(max).toFixed(1)+" MiB/s";
  B.bins.forEach(function(b){
    var x=sx(b[0]), w=Math.max((sx(b[0]+B.bin_s)-x)/2,1);
    [[1,"read"],[2,"write"]].forEach(function(k){
      if(!b[k[0]]) return;
      var y=sy(rate(b[k[0]]));
      var r=el("rect",{"class":"io-"+k[1],x:x+(k[0]-1)*w,y:y,width:w,height:H-Bm-y,fill:COLORS[k[0]-1]},svg);
      el("title",{},r).textContent=k[1]+" "+rate(b[k[0]]).toFixed(3)+" MiB/s ("+mib(b[k[0]])+") from "+fmt(b[0]*1e6);
    });
  });
  var legend=document.getElementById("io-bandwidth-legend");
  ["read","write"].forEach(function(n,i){ var s=document.createElement("span"); s.innerHTML="<i style=\"background:"+COLORS[i]+"\"></i>"; s.appendChild(document.createTextNode(n)); legend.appendChild(s); });
}
function badInput(){
  var B=D.bad_input; document.getElementById("bad-input-line").textContent=B.line;
  var t=document.getElementById("bad-input");
  B.counts.forEach(function(c){ var tr=document.createElement("tr"); [c[0],c[1]].forEach(function(v){ var td=document.createElement("td"); td.textContent=v; tr.appendChild(td); }); t.appendChild(tr); });
}
var ul=document.getElementById("answer-lines");
D.answer.forEach(function(l){ var li=document.createElement("li"); li.textContent=l; ul.appendChild(li); });
document.getElementById("overview").textContent=D.events+" complete events, "+fmt(D.traced_us)+" traced (the threads' time inside any event: the self times add up to it), "+fmt(D.total_us)+" summed duration, from "+D.files+" file(s).";
// The steady state (every step but the first) or the whole run: the steady
// state first where the report has it; #view=whole or #view=steady picks one.
var VIEW_CHARTS = [["top-ops","top_ops","top model ops and kernels"],["by-module","by_module","time by module"],
  ["no-module","no_module","time outside any module"],["regions","regions","user regions and other events"],
  ["by-phase","by_phase","time by phase"]];
function drawView(view){
  var S = view==="steady" ? D.steady : D;
  VIEW_CHARTS.forEach(function(c){ document.getElementById(c[0]).textContent=""; bars(c[0], S[c[1]], c[2]); });
  var label = view==="steady" ? " \u2014 \u25CF steady state" : (D.steady ? " \u2014 \u25CF whole run" : "");
  Array.prototype.forEach.call(document.querySelectorAll(".view-label"), function(e){ e.textContent=label; });
  if(D.steady) document.getElementById("view-note").textContent = view==="steady" ? "("+D.steady.what+")" :
    "(every step, the first one's compile and warm-up included, and the time outside the steps)";
  document.body.setAttribute("data-view", view);
}
var view = D.steady && location.hash!=="#view=whole" ? "steady" : "whole";
if(D.steady){
  document.getElementById("view-choice").hidden=false;
  Array.prototype.forEach.call(document.querySelectorAll("input[name=view]"), function(r){
    r.checked = r.value===view; r.addEventListener("change", function(){ if(r.checked) drawView(r.value); }); });
}
drawView(view);
bars("by-category", D.by_category, "compile vs run", function(r){ return r[0]+": "+fmt(r[2])+" of wall time"; });
stepBars();
icicle("module-icicle", D.module_tree);
bars("compile-phases", D.compile_phases, "compile work");
roofline();
stepTimeline();
timeline("timeline");
if(D.io){ document.getElementById("io-section").hidden=false; document.getElementById("io-summary").textContent=D.io.summary;
  document.getElementById("io-runtime").textContent=[D.io.checkpoint, D.io.runtime].filter(function(x){return x;}).join(". ");
  if(D.io.by_file.length) bars("io-by-file", D.io.by_file, "I/O time by data file", ioTip);
  else document.getElementById("io-by-file").textContent="No data files: every traced file is the runtime's or a checkpoint's."; bars("io-by-call", D.io.by_call, "I/O time by call", ioTip);
  bars("io-by-process", D.io.by_process, "I/O time by process", ioTip); ioBandwidth(); }
badInput();
document.body.setAttribute("data-rendered","yes");
})();
