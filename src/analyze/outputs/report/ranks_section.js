(function(){
var R=@RANKS@;
var NS="http://www.w3.org/2000/svg";
function el(tag,attrs,parent){var e=document.createElementNS(NS,tag);for(var k in attrs)e.setAttribute(k,attrs[k]);if(parent)parent.appendChild(e);return e;}
function col(t,name){return t.columns.indexOf(name);}
var S=R.steps, ST=R.stragglers;
var problems=[]; if(R.missing_ranks.length)problems.push("missing rank(s) "+R.missing_ranks.join(" "));
if(R.incomplete_ranks.length)problems.push("incomplete rank(s) "+R.incomplete_ranks.join(" ")+" (file cut short)");
document.getElementById("ranks-note").textContent=R.alignment.note+(problems.length?"; "+problems.join("; "):"");
var iStep=col(S,"step"),iRank=col(S,"rank"),iStr=col(S,"straggler");
var ranks=[],steps=[],cells={};
S.rows.forEach(function(r){ if(r[iRank]===null||r[iStep]<0)return;
  if(ranks.indexOf(r[iRank])<0)ranks.push(r[iRank]); if(steps.indexOf(r[iStep])<0)steps.push(r[iStep]);
  cells[r[iStep]+":"+r[iRank]]=r; });
ranks.sort(function(a,b){return a-b;}); steps.sort(function(a,b){return a-b;});
function draw(metric){
  var host=document.getElementById("rank-heat"); host.innerHTML="";
  var iv=col(S,metric), max=0;
  for(var k in cells) max=Math.max(max,cells[k][iv]);
  var cw=Math.max(14,Math.min(60,Math.floor(900/Math.max(steps.length,1)))), ch=18, L=70, T=20;
  var svg=el("svg",{"class":"chart","width":L+cw*steps.length+10,"height":T+ch*ranks.length+10,"role":"img","aria-label":"rank x step heat map"},host);
  steps.forEach(function(s,j){ if(steps.length<=40||j%Math.ceil(steps.length/40)==0) el("text",{x:L+j*cw+cw/2,y:T-6,"text-anchor":"middle"},svg).textContent=s; });
  ranks.forEach(function(rk,i){
    el("text",{x:L-6,y:T+i*ch+13,"text-anchor":"end"},svg).textContent="rank "+rk;
    steps.forEach(function(s,j){ var r=cells[s+":"+rk]; if(!r)return;
      var v=max>0?r[iv]/max:0, g=Math.round(255*(1-v));
      var c=el("rect",{"class":"heat-cell",x:L+j*cw,y:T+i*ch,width:cw-1,height:ch-1,fill:"rgb(255,"+g+","+g+")",
        stroke:r[iStr]?"#000":"none","stroke-width":r[iStr]?2:0},svg);
      el("title",{},c).textContent="step "+s+", rank "+rk+": step "+(r[col(S,"duration_us")]/1e3).toFixed(3)+" ms, waiting "+
        (r[col(S,"wait_us")]/1e3).toFixed(3)+" ms, transfer "+(r[col(S,"transfer_us")]/1e3).toFixed(3)+" ms"+(r[iStr]?" (straggler)":"");
    });
  });
}
draw("duration_us");
Array.prototype.forEach.call(document.getElementsByName("heat-metric"),function(b){b.addEventListener("change",function(){draw(b.value);});});
var body=document.querySelector("#straggler-table tbody");
ST.rows.forEach(function(r){ var tr=document.createElement("tr");
  [r[0],r[1]===null?"-":r[1],(r[2]/1e3).toFixed(3),(r[3]/1e3).toFixed(3),r[4],(r[5]/1e3).toFixed(3),(r[6]/1e3).toFixed(3)].forEach(function(v){
    var td=document.createElement("td"); td.textContent=v; tr.appendChild(td); });
  body.appendChild(tr); });
document.body.setAttribute("data-ranks-rendered","yes");
})();
