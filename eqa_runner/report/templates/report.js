function applyFilters(){
  const cat=document.getElementById('fcat').value;
  const min=parseFloat(document.getElementById('fscore').value);
  let shown=0;
  document.querySelectorAll('tr.ep').forEach(tr=>{
    const s=parseFloat(tr.dataset.score);
    const ok=(cat===''||tr.dataset.category===cat)&&(isNaN(min)||(!isNaN(s)&&s>=min));
    tr.style.display=ok?'':'none'; if(ok) shown++;
  });
  document.getElementById('nshown').textContent=shown;
}
document.addEventListener('DOMContentLoaded',()=>{
  document.getElementById('fcat').addEventListener('change',applyFilters);
  document.getElementById('fscore').addEventListener('change',applyFilters);
  applyFilters();
});
