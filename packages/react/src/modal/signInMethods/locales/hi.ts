import type { LinkingMessages } from '../en.js'

const hi: LinkingMessages = {
  signInMethods: 'साइन-इन के तरीके',
  loadingMethods: 'साइन-इन के तरीके लोड हो रहे हैं…',
  signInToManage: 'साइन-इन के तरीके देखने और बदलने के लिए ऐप में साइन इन करें।',
  kindEmail: 'ईमेल',
  kindPasskey: 'पासकी',
  kindWallet: 'वॉलेट',
  kindOAuth: 'सोशल खाता',
  linkedOn: '{date} को जोड़ा गया',
  remove: 'हटाएँ',
  removeMethod: '{label} हटाएँ',
  onlyMethod: 'साइन इन करने का यही आपका एकमात्र तरीका है। इसे हटाने से पहले कोई दूसरा जोड़ें।',
  addMethod: 'साइन-इन का तरीका जोड़ें',
  emailToLink: 'जोड़ने के लिए ईमेल पता',
  sendCode: 'कोड भेजें',
  typeCodeInFrame: '{email} पर भेजा गया कोड डायलॉग में लिखें।',
  signInWalletToLink: '{name} में संदेश पर हस्ताक्षर करें',
  linking: 'जोड़ा जा रहा है…',
  methodLinked: '{label} जुड़ गया। अब आप इससे साइन इन कर सकते हैं।',
  removing: 'हटाया जा रहा है…',
  methodRemoved: '{label} हटाया गया।',
  secondFactor: 'दूसरा फ़ैक्टर',
  mfaOff: 'कोई दूसरा फ़ैक्टर सेट नहीं है।',
  mfaOn: 'एक ऑथेंटिकेटर ऐप सेट है।',
  setUpTotp: 'ऑथेंटिकेटर ऐप सेट करें',
  settingUpTotp: 'ऑथेंटिकेटर ऐप सेट हो रहा है…',
  totpEnrolled: 'ऑथेंटिकेटर ऐप सेट हो गया। अपने रिकवरी कोड सुरक्षित जगह रखें।',
  methodsStatus: 'साइन-इन के तरीकों की स्थिति',
}

export default hi
