-- Argo CD health of a CouchBenchmark or a CouchBenchmarkSchedule, read from the same kstatus
-- conditions as Flux's health checks read them (docs/gitops.md), in the same order:
-- being deleted, a spec not yet observed, Stalled (what a person must look at), Reconciling
-- (under way), Ready. A suspended schedule that is otherwise healthy is Suspended.
local hs = {status = "Progressing", message = "waiting for the operator's first status"}
if obj.metadata.deletionTimestamp ~= nil then
  hs.message = "being deleted"
  return hs
end
if obj.status == nil or obj.status.conditions == nil then
  return hs
end
if obj.status.observedGeneration ~= nil and obj.status.observedGeneration ~= obj.metadata.generation then
  hs.message = "the operator has not yet observed generation " .. obj.metadata.generation
  return hs
end
local conditions = {}
for _, c in ipairs(obj.status.conditions) do
  conditions[c.type] = c
end
local stalled, reconciling, ready = conditions["Stalled"], conditions["Reconciling"], conditions["Ready"]
if stalled ~= nil and stalled.status == "True" then
  hs.status = "Degraded"
  hs.message = stalled.reason .. ": " .. stalled.message
elseif reconciling ~= nil and reconciling.status == "True" then
  hs.message = reconciling.message
elseif ready ~= nil and ready.status == "True" then
  hs.status = "Healthy"
  if obj.spec ~= nil and obj.spec.suspend == true then
    hs.status = "Suspended"
  end
  hs.message = ready.message
elseif ready ~= nil then
  hs.message = ready.message
end
return hs
